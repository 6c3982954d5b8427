"""The keys of the two text boxes (the message box and a message edited in place), from one
SubmitEdit: Enter submits, Shift+Enter is a new line, Escape escapes, Tab moves on; Ctrl+Tab types a
tab in the message box only."""

from __future__ import annotations

from PySide6.QtCore import Qt

from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.chat.transcript.inline_editor import InlineEditor


def test_the_message_box_sends_on_enter_and_stops_on_escape(qtbot) -> None:
    box = InputBox()
    qtbot.addWidget(box)
    qtbot.keyClicks(box.editor, "two")
    qtbot.keyClick(box.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(box.editor, "lines")
    qtbot.keyClick(box.editor, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert box.editor.toPlainText() == "two\nlines\t"
    with qtbot.waitSignal(box.send) as sent:
        qtbot.keyClick(box.editor, Qt.Key.Key_Return)
    assert sent.args == ["two\nlines"] and box.editor.toPlainText() == ""
    with qtbot.waitSignal(box.stop):
        qtbot.keyClick(box.editor, Qt.Key.Key_Escape)
    assert box.editor.tabChangesFocus()


def test_an_edited_message_saves_on_enter_and_cancels_on_escape(qtbot) -> None:
    editor = InlineEditor("old")
    qtbot.addWidget(editor)
    qtbot.keyClick(editor.text, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(editor.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(editor.text, "new")
    with qtbot.waitSignal(editor.saved) as saved:
        qtbot.keyClick(editor.text, Qt.Key.Key_Enter)
    assert saved.args == ["old\nnew"]
    with qtbot.waitSignal(editor.cancelled):
        qtbot.keyClick(editor.text, Qt.Key.Key_Escape)
    qtbot.keyClick(editor.text, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert "\t" not in editor.text.toPlainText() and editor.text.tabChangesFocus()
