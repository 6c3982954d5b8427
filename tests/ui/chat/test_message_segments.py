"""A message's text as segments: prose wraps, each code block scrolls sideways on its own, the pane keeps
its width; streamed or set at once, the same segments; Copy, links and the theme follow every segment."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication

from prefill.ui.chat.transcript.message_widget import MessageWidget
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.chat.transcript.view import ChatView
from prefill.ui.widgets.code_palette import DARK_CODE, LIGHT_CODE

LONG_LINE = "result = compute(" + ", ".join(f"argument_{i}" for i in range(60)) + ")"
PROSE = "The **cache** keeps what the model has read, so a second question reuses it. " * 6
TEXT = f"{PROSE}\n\n```python\n{LONG_LINE}\n```\n\nAnd then {PROSE}\n\n~~~\n{LONG_LINE} # two\n~~~\nThe end."


def _view(qtbot, palette=None) -> ChatView:
    v = ChatView(TranscriptModel(), palette)
    qtbot.addWidget(v)
    v.resize(520, 600)
    v.show()
    return v


def _settled(qtbot, v: ChatView) -> None:
    qtbot.waitUntil(lambda: v.screen_complete() and not v._fill.isActive(), timeout=10_000)


def _shown(w: MessageWidget) -> list[tuple[bool, str]]:
    return [(s.code, s.toPlainText()) for s in w.body.segments if not s.isHidden()]


def test_prose_wraps_and_each_code_block_scrolls_on_its_own(qtbot) -> None:
    v = _view(qtbot)
    v.model.append_row(Row("assistant", [TEXT]))
    _settled(qtbot, v)
    w = v.live_widget(0)
    assert w is not None
    kinds = [s.code for s in w.body.segments]
    assert kinds == [False, True, False, True, False]
    pane = v.viewport().width()
    qtbot.waitUntil(lambda: all(s.horizontalScrollBar().maximum() > 0 for s in w.body.code_segments()))
    for s in w.body.segments:
        assert s.isVisible() and s.width() <= pane
        if s.code:
            bar = s.horizontalScrollBar()
            assert bar.isVisible()
            # The bar is part of the segment's height: the code's last line is not under it.
            assert s.height() >= int(s.document().size().height()) + bar.sizeHint().height()
            bar.setValue(bar.maximum())
            assert bar.value() == bar.maximum() > 0  # the end of the line can be reached
        else:
            assert s.horizontalScrollBar().maximum() == 0
            assert s.document().size().width() <= s.viewport().width() + 1
    prose = w.body.segments[0]
    assert prose.document().documentLayout().blockBoundingRect(prose.document().begin()).height() > \
        2 * prose.fontMetrics().lineSpacing()  # the long paragraph wraps onto several lines
    assert w.width() <= pane and w.minimumSizeHint().width() < pane
    assert len([s for s in w.body.segments if s.code and s.horizontalScrollBar().isVisible()]) == 2
    # The row's height is the message's: every segment counted, the bars included.
    assert v._heights[0] >= sum(s.height() for s in w.body.segments)


def test_streamed_in_pieces_gives_the_segments_set_at_once(qtbot) -> None:
    at_once = MessageWidget("assistant")
    qtbot.addWidget(at_once)
    at_once.set_content(TEXT)
    v = _view(qtbot)
    row = v.model.append_row(Row("assistant", [], streaming=True))
    _settled(qtbot, v)
    fence = TEXT.index("```python")
    close = TEXT.index("```\n\nAnd then")
    # The fence opening split over two flushes, the code in several, the closing fence later.
    cuts = [fence + 2, fence + 6, fence + 12, fence + 40, fence + 90, close + 1, close + 4, len(TEXT) - 20]
    at = 0
    w = v.live_widget(row)
    assert w is not None
    for cut in [*cuts, len(TEXT)]:
        v.model.append_text(row, TEXT[at:cut])
        at = cut
        if cut == fence + 40:
            assert [s.code for s in w.body.segments] == [False, True]  # the code shows as it comes
            assert w.body.segments[1].toPlainText().endswith(TEXT[fence + 12 : fence + 40])
    v.model.update_row(row, streaming=False)
    assert v.live_widget(row) is w
    assert _shown(w) == _shown(at_once)
    assert [s.toHtml() for s in w.body.segments] == [s.toHtml() for s in at_once.body.segments]
    assert w.text() == TEXT


def test_copy_copies_the_whole_text_and_a_block_link_its_code(qtbot) -> None:
    v = _view(qtbot)
    v.model.append_row(Row("assistant", [TEXT]))
    _settled(qtbot, v)
    w = v.live_widget(0)
    assert w is not None
    QGuiApplication.clipboard().clear()
    w.buttons["copy"].click()  # the view copies the message's whole source
    assert QGuiApplication.clipboard().text() == TEXT
    second = w.body.code_segments()[1]
    second.anchorClicked.emit(QUrl("copy:0"))
    assert QGuiApplication.clipboard().text() == f"{LONG_LINE} # two"


def test_a_theme_switch_recolours_the_code(qtbot) -> None:
    v = _view(qtbot, LIGHT_CODE)
    v.model.append_row(Row("assistant", [TEXT]))
    _settled(qtbot, v)
    w = v.live_widget(0)
    assert w is not None and all(LIGHT_CODE.background in s.toHtml() for s in w.body.code_segments())
    v.set_code_palette(DARK_CODE)
    _settled(qtbot, v)
    w = v.live_widget(0)
    assert w is not None and len(w.body.code_segments()) == 2
    assert all(DARK_CODE.background in s.toHtml() and LIGHT_CODE.background not in s.toHtml()
               for s in w.body.code_segments())


def test_an_answer_that_opens_with_code_shows_no_empty_prose(qtbot) -> None:
    w = MessageWidget("assistant")
    qtbot.addWidget(w)
    w.set_content(f"```\n{LONG_LINE}\n```")
    assert [s.code for s in w.body.segments if not s.isHidden()] == [True]
    w.set_content("plain again")  # reused for another version: one prose segment
    assert _shown(w) == [(False, "plain again")]


def test_a_finished_message_continued_renders_as_one_text(qtbot) -> None:
    streamed = MessageWidget("assistant")
    qtbot.addWidget(streamed)
    half = TEXT.index("And then")
    streamed.append(TEXT[:half])
    streamed.finish()
    streamed.append(TEXT[half:])  # a continued answer
    streamed.finish()
    at_once = MessageWidget("assistant")
    qtbot.addWidget(at_once)
    at_once.set_content(TEXT)
    assert _shown(streamed) == _shown(at_once) and streamed.text() == TEXT


def test_a_block_whose_last_line_is_long_opens_at_its_start(qtbot) -> None:
    v = _view(qtbot)
    v.model.append_row(Row("assistant", [f"Look:\n\n```python\nimport csv\n{LONG_LINE}\n```"]))
    _settled(qtbot, v)
    w = v.live_widget(0)
    assert w is not None
    bar = w.body.code_segments()[0].horizontalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    assert bar.value() == 0  # not scrolled to the end of the line the text ended on
