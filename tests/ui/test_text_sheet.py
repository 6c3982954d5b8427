"""The sheets that ask for one text, driven as a person would: renaming a chat (Enter saves, Esc
cancels, a blank name is not taken) and a multi-line text (Enter starts a new line, Ctrl+Enter saves)."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QPlainTextEdit, QWidget

from prefill.store import ConversationRecord
from prefill.ui.history.conversation_list import ConversationList
from prefill.ui.widgets.text_sheet import TextSheet


def _record(cid: int, title: str, when: float) -> ConversationRecord:
    return ConversationRecord(id=cid, title=title, created_at=when, updated_at=when, system_prompt="", model="",
                              settings={}, uid=f"u{cid}")


def _chats(qtbot) -> ConversationList:
    chats = ConversationList()
    qtbot.addWidget(chats)
    now = time.time()
    chats.set_conversations([_record(1, "first", now), _record(2, "Old name", now)], current=2)
    chats.show()
    return chats


def _open_rename(qtbot, chats: ConversationList) -> TextSheet:
    qtbot.mouseClick(chats.rename_button, Qt.MouseButton.LeftButton)
    sheet = chats.rename_sheet
    assert sheet is not None
    qtbot.waitUntil(sheet.isVisible)
    return sheet


def test_renaming_a_chat_in_its_sheet_enter_saves(qtbot) -> None:
    chats = _chats(qtbot)
    sheet = _open_rename(qtbot, chats)
    assert sheet.windowModality() == Qt.WindowModality.WindowModal and sheet.windowTitle() == "Rename chat"
    assert sheet.field.text() == "Old name" and sheet.field.hasSelectedText()  # typing replaces it
    assert sheet.save_button.text() == "Rename"
    assert sheet.width() >= 480  # roomy: the chat column's least width, not a tiny input dialog
    qtbot.keyClicks(sheet.field, "Sum a CSV column")
    with qtbot.waitSignal(chats.rename_requested) as renamed:
        qtbot.keyClick(sheet.field, Qt.Key.Key_Return)
    assert renamed.args == [2, "Sum a CSV column"]
    assert not sheet.isVisible()


def test_esc_leaves_the_chat_s_name_as_it_was(qtbot) -> None:
    chats = _chats(qtbot)
    sheet = _open_rename(qtbot, chats)
    qtbot.keyClicks(sheet.field, "Something else")
    with qtbot.assertNotEmitted(chats.rename_requested):
        qtbot.keyClick(sheet.field, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda: not sheet.isVisible())


def test_a_blank_name_is_not_taken(qtbot) -> None:
    chats = _chats(qtbot)
    sheet = _open_rename(qtbot, chats)
    qtbot.keyClick(sheet.field, Qt.Key.Key_Delete)  # the selected name goes
    qtbot.keyClicks(sheet.field, "   ")
    assert not sheet.save_button.isEnabled()
    with qtbot.assertNotEmitted(chats.rename_requested):
        qtbot.keyClick(sheet.field, Qt.Key.Key_Return)
    assert sheet.isVisible()
    sheet.reject()


@pytest.mark.parametrize("allow_empty", [True, False])
def test_a_multi_line_sheet_takes_new_lines_and_saves_on_ctrl_enter(qtbot, allow_empty: bool) -> None:
    parent = QWidget()
    qtbot.addWidget(parent)
    parent.show()
    sheet = TextSheet(parent, "System prompt", "How the model should answer.", "", multiline=True,
                      allow_empty=allow_empty)
    sheet.open()
    qtbot.waitUntil(sheet.isVisible)
    assert isinstance(sheet.field, QPlainTextEdit)
    assert sheet.save_button.isEnabled() == allow_empty  # an empty system prompt is none at all
    assert sheet.buttons.button(QDialogButtonBox.StandardButton.Save).icon().isNull()
    qtbot.keyClicks(sheet.field, "Answer like a pirate.")
    qtbot.keyClick(sheet.field, Qt.Key.Key_Return)  # a new line, not Save
    qtbot.keyClicks(sheet.field, "Keep it short.")
    assert sheet.isVisible()
    with qtbot.waitSignal(sheet.saved) as saved:
        qtbot.keyClick(sheet.field, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert saved.args == ["Answer like a pirate.\nKeep it short."]
    assert not sheet.isVisible()
