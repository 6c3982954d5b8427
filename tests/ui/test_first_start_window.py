"""The window as it first opens: the message box has the keyboard, and the CPU is said quietly."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtWidgets import QApplication

from tests.ui.conftest import LOAD_TIMEOUT, small_settings


def test_message_box_has_the_keyboard_when_the_window_opens_and_after_a_load(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings())
    qtbot.waitUntil(lambda: QApplication.focusWidget() is w.input.editor, timeout=5000)
    w.model_combo.setFocus()  # as picking a model from the list leaves it
    qtbot.waitUntil(lambda: QApplication.focusWidget() is w.model_combo, timeout=5000)
    with qtbot.waitSignal(w.model_loaded, timeout=LOAD_TIMEOUT):
        w.load_model(str(smollm2))
    qtbot.waitUntil(lambda: QApplication.focusWidget() is w.input.editor, timeout=5000)
    qtbot.keyClicks(w.input.editor, "typed at once")
    assert w.input.editor.toPlainText() == "typed at once"


def test_cpu_without_a_gpu_is_a_quiet_backend_line_not_a_warning(app, qtbot, smollm2: Path) -> None:
    """This machine has no NVIDIA GPU and a CPU build: "auto" (the default) runs on the CPU, no fault."""
    from prefill.engine.llama.hardware import nvidia_gpus
    from prefill.engine.llama.runtime import supports_gpu_offload

    if supports_gpu_offload() or nvidia_gpus():
        import pytest

        pytest.skip("this machine has a GPU build or an NVIDIA GPU")
    s = small_settings()
    w = app.open(replace(s, model=replace(s.model, n_gpu_layers="auto")))
    with qtbot.waitSignal(w.model_loaded, timeout=LOAD_TIMEOUT):
        w.load_model(str(smollm2))
    assert w.sidebar.text("backend") == "CPU (no NVIDIA GPU found)"
    assert w.sidebar.warning.isHidden() and "⚠" not in w.notice.text()
