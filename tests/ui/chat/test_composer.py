"""The composer (ui/chat/composer/input_box.py): a card in the chat's column with the field, the attach
buttons and Send inside it. Send becomes Stop while an answer streams and back; the card's buttons are
reached by Tab, each with its name, its icon and its tooltip; the card's border follows the field's focus;
the field grows with its text up to a limit; the card keeps to the chat column's widths. A scripted
model answers (no llama.cpp)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QToolButton, QWidget

from prefill.store import HistoryStore, SettingsFile
from prefill.ui.chat.composer.input_box import MAX_LINES, PAD, InputBox
from prefill.ui.main_window import MainWindow
from prefill.ui.widgets.tokens import COLUMN, column_width
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.store_worker import StoreProxy, Stores
from tests.scripted_backend import ScriptedBackend
from tests.ui.conftest import ANSWER_TIMEOUT, OpenWindows, small_settings
from tests.ui.test_citations_window import answering


class Windows(OpenWindows):
    def open(self, data: Path) -> MainWindow:
        store = StoreProxy(Stores(HistoryStore(data / "history.sqlite3"), SettingsFile(data / "settings.json")))
        engine = EngineThread()
        return self.keep(MainWindow(small_settings(), store, engine, None), engine, store)


@pytest.fixture
def window(qtbot, tmp_path: Path) -> Iterator[MainWindow]:
    ws = Windows(qtbot)
    yield ws.open(tmp_path)
    ws.close_all()


def test_send_becomes_stop_while_an_answer_streams_and_back(qtbot, window: MainWindow) -> None:
    w, box = window, window.input
    backend = ScriptedBackend(["One two three four five six."], pause_after=2)
    answering(qtbot, w, backend)
    send_icon = box.button.icon().cacheKey()
    assert (box.button.text(), box.button.accessibleName()) == ("Send", "Send") and not box.button.icon().isNull()
    assert box.button.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonIconOnly
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT) as finished:
        w.controller.send("Count to six.")
        qtbot.waitUntil(backend.paused.is_set, timeout=ANSWER_TIMEOUT)
        qtbot.waitUntil(lambda: box.button.text() == "Stop")
        assert box.button.accessibleName() == "Stop" and "Esc" in box.button.toolTip()
        assert box.button.property("streaming") is True and box.button.icon().cacheKey() != send_icon
        qtbot.mouseClick(box.button, Qt.MouseButton.LeftButton)  # Stop, pressed
    assert finished.args[0].reason == "cancelled"
    qtbot.waitUntil(lambda: box.button.text() == "Send")
    assert box.button.accessibleName() == "Send" and "Enter" in box.button.toolTip()
    assert box.button.property("streaming") is False


def _focus() -> QWidget:
    widget = QApplication.focusWidget()
    assert widget is not None
    return widget


def test_the_cards_buttons_take_tab_with_their_names_and_the_card_follows_the_focus(qtbot, window: MainWindow) -> None:
    w, box = window, window.input
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)
    box.set_images_allowed(True, "")  # as for a model that sees images (without one the button is off)
    box.editor.setFocus()
    qtbot.waitUntil(lambda: box.card.property("focused") is True)
    reached: list[QWidget] = []
    for _ in range(3):
        qtbot.keyClick(_focus(), Qt.Key.Key_Tab)
        reached.append(_focus())
    assert [b.objectName() for b in reached] == ["attach-button", "documents-button", "send-button"]
    assert box.card.property("focused") is False  # the field left: the card's border is soft again
    for b in reached:
        assert isinstance(b, QToolButton) and box.card.isAncestorOf(b)  # inside the card
        assert b.accessibleName() and b.toolTip() and not b.icon().isNull()
        assert b.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonIconOnly
    assert [b.accessibleName() for b in reached] == ["Attach an image", "Documents", "Send"]
    qtbot.keyClick(_focus(), Qt.Key.Key_Backtab)
    qtbot.keyClick(_focus(), Qt.Key.Key_Backtab)
    qtbot.keyClick(_focus(), Qt.Key.Key_Backtab)
    assert _focus() is box.editor and box.card.property("focused") is True


def test_the_field_grows_with_its_text_up_to_a_limit(qtbot) -> None:
    box = InputBox()
    qtbot.addWidget(box)
    box.resize(800, 300)
    box.show()
    one = box.editor.height()
    box.editor.setPlainText("a\nb\nc\nd")
    qtbot.waitUntil(lambda: box.editor.height() > one)
    four = box.editor.height()
    box.editor.setPlainText("\n".join(["line"] * MAX_LINES))
    qtbot.waitUntil(lambda: box.editor.height() > four)
    most = box.editor.height()
    box.editor.setPlainText("\n".join(["line"] * (MAX_LINES * 3)))
    qtbot.wait(50)  # (nothing to wait for: the height must stay)
    assert box.editor.height() == most  # past the limit it scrolls
    box.editor.clear()
    qtbot.waitUntil(lambda: box.editor.height() == one)


def test_the_card_keeps_to_the_chat_column(qtbot) -> None:
    box = InputBox()
    qtbot.addWidget(box)
    box.show()
    box.resize(1400, 200)
    qtbot.waitUntil(lambda: box.column.width() == COLUMN.max_width)
    left = box.column.x()
    assert abs(left - (box.width() - box.column.geometry().right() - 1)) <= 1  # centred
    assert box.card.width() == box.column.width() and box.meter.width() == box.column.width()
    box.resize(700, 200)
    qtbot.waitUntil(lambda: box.column.width() < 700)
    assert box.column.width() == column_width(700 - 2 * PAD) == 700 - 2 * PAD - 2 * COLUMN.gutter  # as the messages'
    box.resize(500, 200)  # narrower than the least column with its gutters: the gutters go first
    qtbot.waitUntil(lambda: box.column.width() == 500 - 2 * PAD)
