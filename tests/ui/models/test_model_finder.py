"""The model finder: Ctrl+K (or "Find a model…" in the tool bar's picker) lists every model the picker
offers with its size, fit and whether it is in memory; typing filters, Enter loads through the picker's
own path (the engine worker's load, off the GUI thread)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from prefill.engine.units import format_bytes
from prefill.pool.memory import ModelMemory
from prefill.session.residents import ResidentModel, ResidentModels
from prefill.ui.models.picker import FIND
from prefill.ui.shortcuts import SHORTCUTS
from tests.hub.gguf_factory import write_tiny_gguf
from tests.ui.conftest import small_settings

WAIT = 10_000


def test_ctrl_k_opens_the_finder_and_filtering_and_enter_switch_the_model(
        app, qtbot, tmp_path: Path, smollm2: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hugging Face cache
    models = tmp_path / "models"
    alpha = write_tiny_gguf(models / "org" / "Alpha-Chat-GGUF" / "Alpha-Chat-Q4_K_M.gguf", name="alpha")
    beta = write_tiny_gguf(models / "org" / "Beta-Coder-GGUF" / "Beta-Coder-Q8_0.gguf", name="beta")
    s = small_settings()
    w = app.open(replace(s, ui=replace(s.ui, models_dir=str(models))))
    qtbot.waitUntil(lambda: str(beta) in w.picker.listed(), timeout=WAIT)  # the library, read on a pool job
    w.picker.set_residents(ResidentModels((ResidentModel(str(smollm2), "SmolLM2", ModelMemory(100 << 20, 20 << 20,
                                                                                            8 << 20), False, True),)))
    asked: list[str] = []
    monkeypatch.setattr(w.engine.worker, "load", lambda path, _settings: asked.append(path) or 7)
    assert any(sc.keys == "Ctrl+K" and sc.name == "find-model" for sc in SHORTCUTS)  # in the sheet too
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)  # window shortcuts answer only in the active window
    qtbot.keyClick(QApplication.focusWidget() or w, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    finder = w.model_finder
    qtbot.waitUntil(finder.isVisible, timeout=WAIT)
    assert set(finder.shown_paths()) >= {str(alpha), str(beta), str(smollm2)}  # the bundled model too
    assert finder.shown_paths()[0] == str(smollm2)  # the models in memory first
    qtbot.waitUntil(finder.query.hasFocus, timeout=WAIT)
    # Sizes and fit estimates come in off the GUI thread.
    qtbot.waitUntil(lambda: all(p in finder.measured for p in (str(alpha), str(beta), str(smollm2))), timeout=WAIT)
    cards = {c.key: c for c in finder.cards.cards}
    assert cards[str(beta)].lines[0].startswith(format_bytes(beta.stat().st_size) + " · needs ")
    assert cards[str(beta)].verdict in ("good", "partial", "cpu") and cards[str(beta)].lines[1].startswith(
        "Not in memory")
    bundled = cards[str(smollm2)]
    assert bundled.mark == "●" and bundled.lines[1] == "In memory · 128.0 MiB · the chat's model"
    qtbot.keyClicks(finder.query, "coder q8")  # every word, in any order
    assert finder.shown_paths() == [str(beta)] and finder.current_path() == str(beta)
    with qtbot.waitSignal(w.loading.started, timeout=WAIT) as started:
        qtbot.keyClick(finder.query, Qt.Key.Key_Return)
    assert asked == [str(beta)] and "Beta Coder" in started.args[0]  # the picker's load, as a pick there
    assert not finder.isVisible()
    # The tool bar's picker opens it too; ↓ then Enter picks the second model listed.
    combo = w.model_combo
    combo.activated.emit(combo.findData(FIND))
    qtbot.waitUntil(finder.isVisible, timeout=WAIT)
    assert finder.query.text() == "" and finder.current_path() == finder.shown_paths()[0]
    qtbot.keyClick(finder.query, Qt.Key.Key_Down)
    second = finder.shown_paths()[1]
    assert finder.current_path() == second
    qtbot.keyClick(finder.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: asked[-1:] == [second], timeout=WAIT)
    assert combo.currentData() != FIND  # a command, not a model shown as chosen
