"""A search hit far up a long stored chat opens the chat at that message (no model needed)."""

from __future__ import annotations

import time

from prefill.store import ArchivedConversation, ArchivedMessage, HistoryStore

N = 1000
NEEDLE_AT = 7


def long_history(path, n: int = N) -> None:
    now = time.time()
    messages = tuple(
        ArchivedMessage(
            "user" if i % 2 == 0 else "assistant",
            "the word okapi lives here" if i == NEEDLE_AT else f"message {i}\n\n```\ncode {i}\n```",
            created_at=now + i,
        )
        for i in range(n)
    )
    with HistoryStore(path) as history:
        history.import_conversations(
            [ArchivedConversation("long", "A long chat", now, now + n, messages=messages)]
        )


def test_search_hit_opens_a_long_chat_at_the_message(app, qtbot) -> None:
    long_history(app.data / "history.sqlite3")
    w = app.open()
    w.stack.setCurrentWidget(w.chat_view)  # as once a model is loaded
    w.conversations.search.setText("okapi")
    qtbot.waitUntil(lambda: w.conversations.list.count() == 1, timeout=5000)
    with qtbot.waitSignal(w.controller.row_requested, timeout=5000) as blocker:
        w.conversations.list.setCurrentRow(0)
    assert blocker.args == [NEEDLE_AT]
    view = w.chat_view
    assert w.transcript.rowCount() == N
    qtbot.waitUntil(
        lambda: view.screen_complete() and view.live_widget(NEEDLE_AT) is not None, timeout=5000
    )
    assert view.row_at_top() == NEEDLE_AT
    assert "okapi" in view.live_widget(NEEDLE_AT).text()
    assert view.live_widget(N - 1) is None  # the end of the chat was not rendered on the way
    assert len(view.live_rows()) < 60


def test_a_title_hit_opens_the_chat_at_its_end(app, qtbot) -> None:
    long_history(app.data / "history.sqlite3", 200)
    w = app.open()
    w.stack.setCurrentWidget(w.chat_view)
    w.conversations.search.setText("long chat")
    qtbot.waitUntil(lambda: w.conversations.list.count() == 1, timeout=5000)
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=5000):
        w.conversations.list.setCurrentRow(0)
    view = w.chat_view
    qtbot.waitUntil(lambda: w.transcript.rowCount() == 200, timeout=5000)  # its last messages first, then the rest
    qtbot.waitUntil(view.screen_complete, timeout=5000)
    assert view.live_widget(199) is not None
    bar = view.verticalScrollBar()
    assert bar.value() == bar.maximum()
