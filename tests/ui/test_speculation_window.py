"""Speculative decoding in the window: the three settings in the dialog, a change of mode reaching
the loaded engine without a reload, the mode set on every load, and a refused draft model told as a
notice while the chat goes on one token per step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QComboBox, QLineEdit, QPushButton, QSpinBox

from prefill.engine.local.chat_engine import ChatEngine
from prefill.store.app_settings import Settings
from prefill.ui.main_window import MainWindow
from prefill.ui.settings_dialog import LAYOUT, SettingsDialog, needs_reload
from tests.ui.conftest import load, send, small_settings

COPY = ("Repeat this exactly: the cat sat on the mat, the dog sat on the log, "
        "and the bird sat on the wall by the old stone gate.")


def greedy(**model: object) -> Settings:
    """What speculation runs with: temperature 0, repeat penalty 1, flash attention on."""
    s = small_settings(max_tokens=40)
    return replace(s, model=replace(s.model, flash_attn="on", **model),  # type: ignore[arg-type]
                   sampling=replace(s.sampling, repeat_penalty=1.0))


def edit_settings(qtbot, w: MainWindow, change: Callable[[SettingsDialog], None]) -> None:
    """Open Settings, make `change` in the dialog, press OK."""
    def answer() -> None:
        d = QApplication.activeModalWidget()
        if not isinstance(d, SettingsDialog):
            QTimer.singleShot(10, answer)
            return
        change(d)
        d.accept()

    QTimer.singleShot(0, answer)
    w._open_settings()


def test_the_dialog_shows_the_three_fields(qtbot) -> None:
    model_tab = dict(LAYOUT)["Model"]
    assert model_tab[-3:] == ("model.speculative", "model.draft_model_path", "model.draft_max")
    d = SettingsDialog(Settings())
    qtbot.addWidget(d)
    mode, path, most = (d.editors[k] for k in model_tab[-3:])
    assert isinstance(mode.input, QComboBox)
    assert [mode.input.itemData(i) for i in range(mode.input.count())] == ["off", "ngram", "draft"]
    assert isinstance(most.input, QSpinBox) and most.side.text() == "1 – 32"
    assert isinstance(path.input, QLineEdit) and path.widget.findChild(QPushButton) is not None  # a file chooser
    assert mode.widget.toolTip().startswith("Speculative decoding: off, from the text itself")
    assert not path.widget.isEnabled() and not most.widget.isEnabled()  # off: nothing to set
    mode.set_value("ngram")
    assert most.widget.isEnabled() and not path.widget.isEnabled()
    mode.set_value("draft")
    path.input.setText("/models/draft.gguf")
    most.input.setValue(8)
    new = d.result_settings()
    assert (new.model.speculative, new.model.draft_model_path, new.model.draft_max) == ("draft",
                                                                                      "/models/draft.gguf", 8)
    assert not needs_reload(Settings().model, new.model)


def test_a_change_of_mode_reaches_the_engine_without_a_reload(qtbot, app) -> None:
    w = app.open(greedy())
    load(qtbot, w, app.bundled)
    engine = w.engine.worker.engine
    assert isinstance(engine, ChatEngine) and engine.speculative == "off"
    assert send(qtbot, w, COPY).metrics.draft_n == 0
    loads: list[object] = []
    w.model_loaded.connect(loads.append)
    edit_settings(qtbot, w, lambda d: d.editors["model.speculative"].set_value("ngram"))
    assert w.settings.model.speculative == "ngram"
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.new_conversation()
    done = send(qtbot, w, COPY)  # queued after the mode: this answer speculates
    assert w.engine.worker.engine is engine and engine.speculative == "ngram" and not loads
    assert done.metrics.draft_n > 0 and done.metrics.draft_n_accepted > 0
    assert w.sidebar.speculation_box.isVisible() and w.sidebar.strip.columns
    assert "× plain" in w.sidebar.text("spec-rate")  # compared with the plain answer before


def test_the_mode_is_set_on_every_load(qtbot, app) -> None:
    w = app.open(greedy(speculative="ngram", draft_max=4))
    load(qtbot, w, app.bundled)
    engine = w.engine.worker.engine
    assert isinstance(engine, ChatEngine) and (engine.speculative, engine.draft_max) == ("ngram", 4)
    assert send(qtbot, w, COPY).metrics.draft_n_accepted > 0


def test_a_refused_draft_model_is_a_notice_and_speculation_is_off(qtbot, app, tmp_path: Path) -> None:
    notes = tmp_path / "notes.gguf"
    notes.write_text("not a model")
    w = app.open(greedy(speculative="draft", draft_model_path=str(notes)))
    load(qtbot, w, app.bundled)
    # waited for in the window: the worker's signal comes from the engine thread
    qtbot.waitUntil(lambda: w.notice.isVisible() and "notes.gguf" in w.notice.text(), timeout=60_000)
    said = w.notice.text()
    assert said.startswith("Speculative decoding is off:") and said.endswith("one token per step.")
    engine = w.engine.worker.engine
    assert isinstance(engine, ChatEngine) and engine.speculative == "off"
    f = send(qtbot, w, COPY)
    assert f.text and f.metrics.draft_n == 0  # the chat goes on, one token per step
    # and set later, on the loaded model: the same notice, the same model
    w.show_notice("")
    edit_settings(qtbot, w, lambda d: d.editors["model.draft_max"].input.setValue(5))
    qtbot.waitUntil(lambda: "notes.gguf" in w.notice.text(), timeout=60_000)
    assert w.engine.worker.engine is engine
