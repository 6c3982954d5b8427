"""The window at 900×600 and 1280×720 after a model loads (a scripted model, the theme's type): the chat
list folds so that the chat column keeps its least width, every figure in the sidebar shows whole, the
composer's Send is inside the window and its hint shows whole; the chat list comes back when the window
is wide again, and a chat list the user shows in a narrow window stays, without being saved as folded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from prefill.session.loaded import LoadedModel
from prefill.ui.main_window import MainWindow
from prefill.ui.models.picker import loaded_name
from prefill.ui.widgets.theme import apply_theme
from prefill.ui.widgets.tokens import COLUMN
from tests.scripted_backend import ScriptedBackend
from tests.ui.look import restored_look
from tests.ui.scripted_windows import Windows, answering

MODEL = LoadedModel(path=Path("/m/SmolLM2-135M-Instruct.Q4_1.gguf"), name="SmolLM2 135M Instruct", n_ctx=4096,
                    n_layer=30, backend_summary="CPU", backend_warning="", gpu_build=False, load_ms=691.0,
                    bytes_per_cell=1, model_bytes=92 * 1024 * 1024)


@pytest.fixture
def window(qtbot, tmp_path: Path) -> Iterator[MainWindow]:
    ws = Windows(qtbot)
    with restored_look(QApplication.instance()) as qapp:
        apply_theme(qapp, "light")  # the body type: the widest the window's words get
        w = ws.open(tmp_path)
        w.show()
        answering(qtbot, w, ScriptedBackend(["An apple."]))
        w.sidebar.set_model(MODEL, name=loaded_name(MODEL))  # as a load does
        w.model_loaded.emit(MODEL)
        yield w
        ws.close_all()


def _sized(qtbot, w: MainWindow, width: int, height: int) -> None:
    w.resize(width, height)
    qtbot.waitUntil(lambda: w.size() == QSize(width, height))
    qtbot.waitUntil(lambda: w.stack.width() > 0)


def _whole(label: QLabel) -> bool:
    """A label shown at no less than the width its text asks (wrapped text: at its least)."""
    need = label.minimumSizeHint().width() if label.wordWrap() else label.sizeHint().width()
    return label.width() >= need


def _inside(w: QWidget, part: QWidget) -> bool:
    at = part.mapTo(w, part.rect().topLeft())
    return part.isVisible() and w.rect().contains(QRect(at, part.size()))


def test_at_900x600_the_chat_list_folds_and_every_figure_and_send_show_whole(qtbot, window: MainWindow) -> None:
    w = window
    for width, height in ((900, 600), (1280, 720)):
        _sized(qtbot, w, width, height)
        qtbot.waitUntil(lambda: w.stack.width() >= COLUMN.min_width, timeout=2000)  # the column keeps its least
        assert w.sidebar.isVisible() and w.sidebar.width() >= COLUMN.side_min_width
        values = [label for label in w.sidebar.findChildren(QLabel) if label.isVisible() and label.text()]
        assert len(values) > 4  # the model's figures are shown
        cut = [(label.text(), label.width(), label.sizeHint().width()) for label in values if not _whole(label)]
        assert not cut, cut
        assert _inside(w, w.input.button) and _inside(w, w.sidebar)
        editor = w.input.editor  # empty: its hint, wrapped at the composer's width, shows whole
        margin = int(editor.document().documentMargin())
        hint = editor.fontMetrics().boundingRect(0, 0, editor.viewport().width() - 2 * margin, 10_000,
                                                 int(Qt.TextFlag.TextWordWrap), editor.placeholderText())
        assert editor.viewport().height() >= hint.height() + 2 * margin
    assert w.conversations.isVisible()  # 1280 px: room for the chat list again
    _sized(qtbot, w, 900, 600)
    assert not w.conversations.isVisible() and not w.panels.actions["chats"].isChecked()
    assert "hidden=chats" not in w.panels.state()  # folded for the width, not hidden by the user


def test_a_chat_list_shown_in_a_narrow_window_stays(qtbot, window: MainWindow) -> None:
    w = window
    _sized(qtbot, w, 900, 600)
    assert not w.conversations.isVisible()
    w.panels.actions["chats"].trigger()  # the user wants it: the chat column gives way, the sidebar stays
    assert w.conversations.isVisible() and w.sidebar.isVisible()
    qtbot.waitUntil(lambda: w.sidebar.width() >= COLUMN.side_min_width)
    w.resize(880, 600)
    qtbot.waitUntil(lambda: w.width() == 880)
    assert w.conversations.isVisible()
    w.panels.actions["chats"].trigger()
    assert not w.conversations.isVisible() and "hidden=chats" in w.panels.state()
    _sized(qtbot, w, 1400, 900)
    assert not w.conversations.isVisible()  # the user's hide holds at every width


def test_copying_the_last_answer_scrolled_away_says_so_in_a_toast_not_a_banner(qtbot, window: MainWindow,
                                                                               monkeypatch) -> None:
    w = window
    with qtbot.waitSignal(w.controller.answer_finished, timeout=10_000):
        w.controller.send("Name a fruit.")
    monkeypatch.setattr(w.chat_view, "live_widget", lambda _row: None)  # its row scrolled far out of view
    w.actions_offered.run("copy-answer")  # Ctrl+Shift+C
    assert QApplication.clipboard().text() == "An apple."
    assert w.toast.isVisible() and w.toast.text() == "Copied the last answer."
    assert not w.notice.isVisible()


def test_the_composer_is_as_wide_as_the_messages_column_at_every_width(qtbot, window: MainWindow) -> None:
    from prefill.ui.chat.transcript.view import PAD
    from prefill.ui.widgets.tokens import column_width

    w = window
    w.resize(1400, 900)
    for width in (900, 1280, 1400, 2400):
        _sized(qtbot, w, width, 720)
        qtbot.waitUntil(lambda: w.input.column.width() == column_width(w.input.width() - 2 * PAD), timeout=2000)
        messages = w.chat_view._text_width()  # the transcript's column: its viewport is short of its scroll bar
        assert abs(w.input.column.width() - messages) <= w.chat_view.verticalScrollBar().sizeHint().width(), width
    assert w.input.column.width() == COLUMN.max_width  # 2400 px: no wider than the column's limit


def test_a_sidebar_dragged_wide_stays_when_the_window_narrows_with_the_chat_list_hidden(qtbot,
                                                                                      window: MainWindow) -> None:
    w = window
    _sized(qtbot, w, 1400, 900)
    w.panels.actions["chats"].trigger()  # the user hides the chat list
    sizes = w.splitter.sizes()
    w.splitter.setSizes([sizes[0], sizes[1] - 150, sizes[2] + 150])  # and drags the sidebar wider
    qtbot.waitUntil(lambda: w.sidebar.width() >= 440)
    _sized(qtbot, w, 900, 600)
    assert w.sidebar.isVisible() and w.panels.actions["sidebar"].isChecked()
