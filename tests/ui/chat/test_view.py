"""The chat view renders only the rows near its viewport, whatever the length of the chat."""

from __future__ import annotations

import pytest

from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.chat.transcript.view import ChatView

LONG = 1000
FEW = 60  # far more widgets than a screen and its margins hold, far fewer than LONG


def stored(n: int, first: int = 0) -> list[Row]:
    return [
        Row(
            "user" if i % 2 == 0 else "assistant",
            [f"message {i} with `code`\n\n```python\nx = {i}\n```"],
            message_id=i,
        )
        for i in range(first, first + n)
    ]


@pytest.fixture
def view(qtbot):
    model = TranscriptModel()
    v = ChatView(model)
    qtbot.addWidget(v)
    v.resize(640, 700)
    v.show()
    return v


def settled(qtbot, v: ChatView) -> None:
    """Wait for the screen and its margins to be rendered (slices on a timer)."""
    qtbot.waitUntil(lambda: v.screen_complete() and not v._fill.isActive(), timeout=10_000)


def on_screen(v: ChatView, row: int) -> bool:
    w = v.live_widget(row)
    return w is not None and w.isVisible() and w.geometry().intersects(v.viewport().rect())


def check_widgets_match_rows(v: ChatView) -> None:
    for row in v.live_rows():
        assert v.live_widget(row).text() == v.model.row(row).content
        assert v.live_widget(row).role == v.model.row(row).role


def test_opening_a_long_chat_renders_only_its_last_screen(qtbot, view: ChatView) -> None:
    view.model.set_rows(stored(LONG))
    settled(qtbot, view)
    live = view.live_rows()
    assert 0 < len(live) < FEW
    assert on_screen(view, LONG - 1)
    bar = view.verticalScrollBar()
    assert bar.value() == bar.maximum() > 0
    check_widgets_match_rows(view)


def test_jump_far_up_renders_there_and_gives_back_the_end(qtbot, view: ChatView) -> None:
    view.model.set_rows(stored(LONG))
    settled(qtbot, view)
    view.scroll_to_row(3)
    settled(qtbot, view)
    assert view.row_at_top() == 3 and on_screen(view, 3)
    assert view.live_widget(LONG - 1) is None
    assert len(view.live_rows()) < FEW
    check_widgets_match_rows(view)
    view.scroll_to_row(0)
    settled(qtbot, view)
    assert view.verticalScrollBar().value() == 0 and on_screen(view, 0)


def test_scrolling_up_renders_rows_as_they_come_into_view(qtbot, view: ChatView) -> None:
    view.model.set_rows(stored(LONG))
    settled(qtbot, view)
    bar = view.verticalScrollBar()
    seen: set[int] = set()
    for _ in range(40):
        bar.setValue(bar.value() - bar.pageStep())
        settled(qtbot, view)
        top = view.row_at_top()
        assert on_screen(view, top)
        seen.add(top)
        assert len(view.live_rows()) < FEW
    assert min(seen) < LONG - 40  # it went up some way, a screen at a time
    check_widgets_match_rows(view)


def test_rows_above_changing_height_do_not_move_what_is_read(qtbot, view: ChatView) -> None:
    view.model.set_rows(stored(200))
    view.scroll_to_row(100)
    settled(qtbot, view)
    y = view.live_widget(100).y()
    view.model.update_row(20, content="a much longer message now\n" * 40)  # out of sight, above
    view.model.update_row(99, content="and this one too\n" * 30)  # rendered, above
    settled(qtbot, view)
    assert view.live_widget(100).y() == y


def test_streaming_into_the_last_of_a_long_chat_touches_one_widget(qtbot, view: ChatView) -> None:
    view.model.set_rows(stored(LONG))
    row = view.model.append_row(Row("assistant", [], streaming=True))
    settled(qtbot, view)
    before = {r: view.live_widget(r) for r in view.live_rows()}
    texts = {r: w.text() for r, w in before.items()}
    for i in range(30):
        view.model.append_text(row, f"token {i} ")
    qtbot.waitUntil(lambda: view.live_widget(row).text().endswith("token 29 "))
    assert on_screen(view, row)
    for r, w in before.items():
        if r != row and view.live_widget(r) is w:
            assert w.text() == texts[r]
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() == bar.maximum())
    view.model.update_row(row, streaming=False, content=view.model.row(row).content + "done")
    qtbot.waitUntil(lambda: view.live_widget(row).text().endswith("done"))


def test_actions_name_the_right_row_after_rows_come_and_go(qtbot, view: ChatView) -> None:
    view.model.set_rows(stored(80))
    view.scroll_to_row(40)
    settled(qtbot, view)
    view.model.remove_row(5)
    settled(qtbot, view)
    row = next(r for r in view.live_rows() if view.model.row(r).message_id == 41)
    assert row == 40
    with qtbot.waitSignal(view.message_action) as blocker:
        view.live_widget(row).buttons["delete"].click()
    assert blocker.args == ["delete", 40]
    check_widgets_match_rows(view)


def test_model_stays_valid_under_the_lazy_view(qtbot, qtmodeltester, view: ChatView) -> None:
    m = view.model
    m.set_rows(stored(300))
    qtmodeltester.check(m, force_py=True)
    view.scroll_to_row(150)
    m.append_row(Row("user", ["more"]))
    row = m.append_row(Row("assistant", [], streaming=True))
    m.append_text(row, "streamed")
    m.update_row(row, streaming=False, figures={"completion_tokens": 1}, finish_reason="stop")
    m.remove_row(10)
    m.remove_from(250)
    m.set_rows(stored(40, first=1000))
    qtmodeltester.check(m, force_py=True)
    settled(qtbot, view)
    check_widgets_match_rows(view)
    assert view.live_widget(39) is not None


def test_a_new_palette_renders_again_only_what_is_live(qtbot, view: ChatView) -> None:
    view.model.set_rows(stored(LONG))
    settled(qtbot, view)
    old = [view.live_widget(r) for r in view.live_rows()]  # held: their ids stay theirs
    view.set_code_palette(None)
    settled(qtbot, view)
    assert len(view.live_rows()) < FEW
    assert not {id(w) for w in old} & {id(view.live_widget(r)) for r in view.live_rows()}


def test_a_long_chat_opens_at_its_end_then_reads_the_rest(app, qtbot) -> None:
    """The last messages show first; the earlier ones follow; a send waits for them."""
    from prefill.store import HistoryStore
    from prefill.ui.chat.chat_opening import TAIL_ROWS

    store = HistoryStore(app.data / "history.sqlite3")
    conv = store.create_conversation("long")
    for i in range(3 * TAIL_ROWS):
        store.add_message(conv.id, "user" if i % 2 == 0 else "assistant", f"message {i}")
    store.close()
    w = app.open()
    counts: list[int] = []
    w.controller.conversation_opened.connect(lambda _cid: counts.append(w.transcript.rowCount()))
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(conv.id)
    assert counts == [TAIL_ROWS]  # shown with its last screen's worth
    qtbot.waitUntil(lambda: w.transcript.rowCount() == 3 * TAIL_ROWS, timeout=10_000)
    assert [r.content for r in w.transcript.rows()] == [f"message {i}" for i in range(3 * TAIL_ROWS)]
    assert [m.content for m in w.controller.messages()][0] == "message 0"
