"""The chat's look: a centred column that follows the window within its limits, a question in a soft
bubble at the right and an answer as plain text on the page, the actions as named icons shown on hover
or focus and pressed from the keyboard, Copy that says "Copied" and then Copy again, code blocks with a
header that names the language and copies exactly the code, and the footer's words."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtWidgets import QApplication, QToolButton

from prefill.ui.chat.transcript.message_widget import BUBBLE_SHARE, figures_line
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.chat.transcript.view import GUTTER, PAD, ChatView, column_width
from prefill.ui.widgets.code_palette import DARK_CODE, LIGHT_CODE
from prefill.ui.widgets.colours import DARK, LIGHT
from prefill.ui.widgets.copy_button import COPIED
from prefill.ui.widgets.styles import style_sheet
from prefill.ui.widgets.tokens import COLUMN

CODE = "total = sum(float(row[column]) for row in rows if row[column].strip())  # " + "skips empty cells " * 6
ANSWER = f"Use this:\n\n```python\n{CODE}\nprint(total)\n```\n\nThen run it."


@pytest.fixture
def styled(qapp: QApplication) -> Iterator[None]:
    """The light style sheet on the application, as the window applies it (the one before put back)."""
    before = qapp.styleSheet()
    qapp.setStyleSheet(style_sheet("light"))
    yield
    qapp.setStyleSheet(before)


def _view(qtbot, width: int = 900, height: int = 600) -> ChatView:
    v = ChatView(TranscriptModel(), LIGHT_CODE)
    qtbot.addWidget(v)
    v.resize(width, height)
    v.show()
    return v


def _settled(qtbot, v: ChatView) -> None:
    qtbot.waitUntil(lambda: v.screen_complete() and not v._fill.isActive(), timeout=10_000)


def _icon_image(b: QToolButton) -> QImage:
    return b.icon().pixmap(16, 16).toImage()


def test_the_column_width_grows_with_the_view_between_its_limits() -> None:
    assert column_width(COLUMN.width + 2 * GUTTER) == COLUMN.width  # the width, with a gutter each side
    assert column_width(COLUMN.width + 2 * GUTTER + 100) == COLUMN.width + 50  # then half of what it gains
    assert column_width(5_000) == COLUMN.max_width
    assert column_width(COLUMN.min_width + 10) == COLUMN.min_width  # the gutters go first
    assert column_width(300) == 300  # a view narrower than the least column: all of it
    widths = [column_width(room) for room in range(200, 3000, 7)]
    assert widths == sorted(widths)


def test_the_column_follows_the_window_within_its_limits(qtbot) -> None:
    v = _view(qtbot)
    v.model.append_row(Row("user", ["How do I sum a column of a CSV file?"]))
    v.model.append_row(Row("assistant", ["word " * 400]))
    seen, rooms = [], []
    for width in (440, 600, 900, 1200, 1600, 2400):
        v.resize(width, 600)
        _settled(qtbot, v)
        answer = v.live_widget(1)
        assert answer is not None
        room = v.viewport().width() - 2 * PAD
        assert answer.width() == column_width(room)
        assert min(COLUMN.min_width, room) <= answer.width() <= COLUMN.max_width
        left, right = answer.x(), v.viewport().width() - answer.geometry().right() - 1
        assert abs(left - right) <= 1  # centred
        assert answer.body.width() == answer.width()  # the text runs the column, not the pane
        question = v.live_widget(0)
        assert question is not None and question.geometry().right() == answer.geometry().right()
        seen.append(answer.width())
        rooms.append(room)
    assert seen == sorted(seen)  # it grows with the window
    assert seen[0] == rooms[0] < COLUMN.min_width  # a narrow view: the whole of it
    assert abs(seen[2] - COLUMN.width) <= 40  # about COLUMN.width in a 900 px pane
    assert seen[-1] == COLUMN.max_width < rooms[-1] - 2 * GUTTER  # and no wider, however wide the window


def test_a_question_is_a_soft_bubble_at_the_right_and_an_answer_plain_text(qtbot, styled) -> None:
    v = _view(qtbot, 1000)
    v.model.append_row(Row("user", ["How do I sum a column?"]))
    v.model.append_row(Row("assistant", ["Use the csv module."]))
    v.model.append_row(Row("user", ["a long question " * 60]))
    v.model.append_row(Row("notice", ["The model was loaded again."]))
    _settled(qtbot, v)
    v.scroll_to_row(0)
    _settled(qtbot, v)
    question, answer, long_question, notice = (v.live_widget(r) for r in range(4))
    assert question is not None and answer is not None and long_question is not None and notice is not None
    assert question.bubble.objectName() == "message-bubble"
    assert answer.bubble.objectName() == "message-content"
    # At the right of the column, as wide as its words; a long one takes most of the column and wraps.
    assert question.bubble.geometry().right() == question.width() - 1
    assert question.bubble.width() < question.width() // 2
    assert question.browser.document().begin().layout().lineCount() == 1  # its words not wrapped
    assert long_question.bubble.width() == int(long_question.width() * BUBBLE_SHARE)
    # No titles shouting who speaks; a note keeps a small label.
    assert not question.title.isVisible() and not answer.title.isVisible()
    assert notice.title.isVisible() and notice.title.text() == "Note" and not notice.footer.isVisible()
    # The bubble is filled with the question's colour; the answer stands on the page: no fill, no outline.
    image = v.viewport().grab().toImage()
    page = image.pixelColor(QPoint(1, 1))
    inside = question.bubble.mapTo(v.viewport(), QPoint(question.bubble.width() // 2, 2))
    assert image.pixelColor(inside).name() == LIGHT.user_bubble
    for x, y in ((0, answer.height() // 2), (answer.width() - 1, answer.height() // 2), (answer.width() // 2, 0),
                 (answer.width() - 3, 3)):
        assert image.pixelColor(answer.mapTo(v.viewport(), QPoint(x, y))) == page, (x, y)


def test_actions_are_named_icons_shown_on_hover_or_focus_and_pressed_by_key(qtbot) -> None:
    v = _view(qtbot)
    v.model.append_row(Row("user", ["hello"]))
    v.model.append_row(Row("assistant", ["hi there"]))
    _settled(qtbot, v)
    v.activateWindow()
    qtbot.waitUntil(v.isActiveWindow)
    v.setFocus()  # the transcript itself, not a message's button
    question, answer = v.live_widget(0), v.live_widget(1)
    assert question is not None and answer is not None
    for widget, names in ((question, ("copy", "edit", "branch", "delete")),
                          (answer, ("copy", "regenerate", "branch", "delete"))):
        for name in names:
            b = widget.buttons[name]
            assert not b.icon().isNull() and b.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonIconOnly
            assert b.toolTip() and b.accessibleName() == b.toolTip()
            assert b.isVisible() and b.focusPolicy() & Qt.FocusPolicy.TabFocus  # transparent, not hidden
        assert not widget.actions_shown()
    copy = answer.buttons["copy"]
    copy.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(answer.actions_shown)  # the keyboard in the message shows them
    QGuiApplication.clipboard().clear()
    with qtbot.waitSignal(v.message_action) as pressed:
        qtbot.keyClick(copy, Qt.Key.Key_Space)
    assert pressed.args == ["copy", 1] and QGuiApplication.clipboard().text() == "hi there"


def test_copy_puts_the_text_on_the_clipboard_says_copied_then_copy_again(qtbot) -> None:
    v = _view(qtbot)
    v.model.append_row(Row("assistant", ["The **whole** answer, as written."]))
    _settled(qtbot, v)
    answer = v.live_widget(0)
    assert answer is not None
    copy = answer.buttons["copy"]
    at_rest = _icon_image(copy)
    QGuiApplication.clipboard().clear()
    copy.click()
    assert QGuiApplication.clipboard().text() == "The **whole** answer, as written."
    assert copy.text() == copy.toolTip() == copy.accessibleName() == COPIED
    assert _icon_image(copy) != at_rest  # a check in place of the copy icon
    qtbot.waitUntil(lambda: copy.text() == "Copy", timeout=5_000)
    assert copy.accessibleName() == "Copy the message" and _icon_image(copy) == at_rest


def test_a_code_block_has_a_header_naming_its_language_and_copies_exactly_its_code(qtbot, styled) -> None:
    v = _view(qtbot, 700)
    v.model.append_row(Row("assistant", [ANSWER]))
    _settled(qtbot, v)
    answer = v.live_widget(0)
    assert answer is not None
    (code,) = answer.body.code_segments()
    header = code.header
    assert header is not None and header.isVisible()
    assert header.language.text() == "python"
    assert header.geometry().bottom() < code.viewport().geometry().top()  # above the code
    assert code.toPlainText() == f"{CODE}\nprint(total)"  # no fence, no Copy link in the text
    bar = code.horizontalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)  # the long line scrolls in its block
    assert code.width() <= answer.width()
    # The block is drawn in the code colours, its corners rounded (the view's page shows there).
    image = v.viewport().grab().toImage()
    corner = code.mapTo(v.viewport(), QPoint(0, 0))
    assert image.pixelColor(corner + QPoint(code.width() // 2, 1)).name() == LIGHT.code_block
    assert image.pixelColor(corner).name() == image.pixelColor(QPoint(1, 1)).name() != LIGHT.code_block
    QGuiApplication.clipboard().clear()
    qtbot.mouseClick(header.copy, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == f"{CODE}\nprint(total)"
    assert header.copy.text() == COPIED and header.copy.accessibleName() == COPIED
    qtbot.waitUntil(lambda: header.copy.text() == "Copy", timeout=5_000)
    assert header.copy.accessibleName() == "Copy the code (python)"


def test_a_streaming_code_block_names_its_language_before_it_closes(qtbot) -> None:
    v = _view(qtbot)
    row = v.model.append_row(Row("assistant", [], streaming=True))
    _settled(qtbot, v)
    v.model.append_text(row, "Here:\n\n```sh\nls -l\n")
    v.model.append_text(row, "du -sh")
    answer = v.live_widget(row)
    assert answer is not None
    (code,) = answer.body.code_segments()
    assert code.header is not None and code.header.language.text() == "sh"
    assert code.toPlainText() == "ls -l\ndu -sh"  # the fence's line is not shown
    code.header.copy.click()
    assert QGuiApplication.clipboard().text() == "ls -l\ndu -sh"  # what has come so far


def test_code_blocks_take_each_themes_code_colours() -> None:
    for theme, colours, palette in (("light", LIGHT, LIGHT_CODE), ("dark", DARK, DARK_CODE)):
        assert colours.code_block == palette.background
        assert f"QTextBrowser#code-block {{ background: {colours.code_block};" in style_sheet(theme)


def test_the_footer_says_first_word_and_tok_s_never_ttft() -> None:
    line = figures_line({"completion_tokens": 42, "ttft_ms": 213.4, "decode_tps": 70.43}, "stop")
    assert line == "42 tokens · first word 213 ms · 70.4 tok/s · finished"
    assert "TTFT" not in figures_line({"completion_tokens": 1, "ttft_ms": 5, "decode_tps": 1, "cached_tokens": 9}, "")
