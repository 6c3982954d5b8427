"""The chat's layout holds: a question sent is shown even when scrolled up, a long code line scrolls in
its own block instead of widening the chat or being cut, an empty chat says what to do, the system prompt
stands folded above the messages, and a message's actions show on hover or focus only."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QEnterEvent
from PySide6.QtWidgets import QApplication

from prefill.ui.chat.transcript.message_widget import MessageWidget
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.chat.transcript.view import EMPTY_HINT, ChatView

LONG_LINE = "result = compute(" + ", ".join(f"argument_{i}" for i in range(60)) + ")"


@pytest.fixture
def view(qtbot):
    v = ChatView(TranscriptModel())
    qtbot.addWidget(v)
    v.resize(520, 500)
    v.show()
    return v


def settled(qtbot, v: ChatView) -> None:
    qtbot.waitUntil(lambda: v.screen_complete() and not v._fill.isActive(), timeout=10_000)


def test_a_question_sent_while_scrolled_up_is_scrolled_to(qtbot, view: ChatView) -> None:
    view.model.set_rows([Row("user" if i % 2 == 0 else "assistant", [f"message {i}\n\nmore words " * 3])
                         for i in range(40)])
    settled(qtbot, view)
    bar = view.verticalScrollBar()
    bar.setValue(0)  # the reader scrolls up to the start
    settled(qtbot, view)
    assert bar.value() == 0 and bar.maximum() > 0
    view.model.append_row(Row("user", ["the new question"]))
    view.model.append_row(Row("assistant", [], streaming=True))
    settled(qtbot, view)
    assert bar.value() == bar.maximum()
    new = view.live_widget(40)
    assert new is not None and new.geometry().intersects(view.viewport().rect())


def test_an_answer_streamed_while_scrolled_up_does_not_pull_the_reader_down(qtbot, view: ChatView) -> None:
    view.model.set_rows([Row("assistant", [f"message {i}\n\nmore words " * 3]) for i in range(40)])
    settled(qtbot, view)
    view.verticalScrollBar().setValue(0)
    settled(qtbot, view)
    view.model.append_row(Row("notice", ["a note"]))
    settled(qtbot, view)
    assert view.verticalScrollBar().value() == 0  # only a question sent moves the reader


def test_a_long_code_line_scrolls_in_its_block_and_the_pane_keeps_its_width(qtbot, view: ChatView) -> None:
    width = view.width()
    view.model.append_row(Row("assistant", [f"Here:\n\n```python\n{LONG_LINE}\n```\n\nDone."]))
    settled(qtbot, view)
    w = view.live_widget(0)
    assert w is not None
    prose, code, after = w.body.segments
    assert (prose.code, code.code, after.code) == (False, True, False)
    bar = code.horizontalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    assert bar.isVisible()
    # Only the block scrolls: the prose around it neither scrolls nor shows a bar.
    assert prose.horizontalScrollBar().maximum() == 0 == after.horizontalScrollBar().maximum()
    assert view.width() == width and w.width() <= view.viewport().width()
    assert code.width() <= w.width()
    assert w.minimumSizeHint().width() < width  # nothing in the message asks for the line's width
    # The scroll bar's height is part of the block's: the last code line is not under it.
    assert code.height() >= int(code.document().size().height()) + bar.sizeHint().height()
    bar.setValue(bar.maximum())  # the end of the line can be reached
    assert bar.value() == bar.maximum()


def test_prose_wraps_without_a_sideways_scroll_bar(qtbot, view: ChatView) -> None:
    view.model.append_row(Row("assistant", ["word " * 400]))
    settled(qtbot, view)
    w = view.live_widget(0)
    assert w is not None and len(w.body.segments) == 1
    assert w.browser.horizontalScrollBar().maximum() == 0


def test_an_empty_chat_says_what_to_do(qtbot, view: ChatView) -> None:
    assert view.empty_hint() == EMPTY_HINT
    assert "Enter" in EMPTY_HINT
    view.model.append_row(Row("user", ["hello"]))
    assert view.empty_hint() == ""
    view.model.set_rows([])
    assert view.empty_hint() == EMPTY_HINT


def test_the_system_prompt_stands_folded_above_the_messages(qtbot, view: ChatView) -> None:
    row = view.system_row
    assert row.isHidden() and view.viewportMargins().top() == 0
    view.model.append_row(Row("user", ["hello"]))
    view.set_system_prompt("You answer in French.\nKeep it short. " + "Always be polite. " * 20)
    qtbot.waitUntil(lambda: view.viewportMargins().top() > 0)
    assert row.isVisible() and not row.is_open()
    assert row.preview.text().startswith("You answer in French.")
    assert row.geometry().bottom() < view.viewport().geometry().top() + 1  # above the first message
    folded = view.viewportMargins().top()
    row.toggle.click()
    assert row.is_open() and row.body.isVisible() and row.body.text().startswith("You answer in French.\n")
    qtbot.waitUntil(lambda: view.viewportMargins().top() > folded)
    assert row.width() == view.width()  # the text wraps; it never widens the chat
    view.set_system_prompt("")
    qtbot.waitUntil(lambda: view.viewportMargins().top() == 0)
    assert row.isHidden()


def _enter(widget: MessageWidget) -> None:
    QApplication.sendEvent(widget, QEnterEvent(QPointF(5, 5), QPointF(5, 5), QPointF(5, 5)))


def test_actions_show_on_hover_and_on_focus_only(qtbot, view: ChatView) -> None:
    view.model.append_row(Row("user", ["hello"]))
    view.model.append_row(Row("assistant", ["hi there"]))
    settled(qtbot, view)
    view.activateWindow()
    qtbot.waitUntil(view.isActiveWindow)
    answer = view.live_widget(1)
    assert answer is not None
    assert not answer.actions_shown()
    # Transparent, not hidden: Tab still stops on them.
    assert answer.buttons["copy"].isVisible()
    assert answer.buttons["copy"].focusPolicy() & Qt.FocusPolicy.TabFocus
    _enter(answer)
    assert answer.actions_shown()
    QApplication.sendEvent(answer, QEvent(QEvent.Type.Leave))
    assert not answer.actions_shown()
    answer.buttons["regenerate"].setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(answer.actions_shown)
    view.setFocus()
    qtbot.waitUntil(lambda: not answer.actions_shown())
