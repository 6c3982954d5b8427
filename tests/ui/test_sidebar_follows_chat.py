"""The sidebar follows the open chat: its last answer's stored figures, not the last run; a new chat clears
them. The window's title names the model as a person reads it."""

from __future__ import annotations

from prefill.engine.events import MetricsSnapshot
from prefill.store import HistoryStore


def test_opening_chats_shows_their_last_answer(app, qtbot) -> None:
    history = HistoryStore(app.data / "history.sqlite3")
    fast = history.create_conversation("fast")
    history.add_message(fast.id, "user", "hi")
    history.add_message(fast.id, "assistant", "hello", finish_reason="stop",
                        figures=MetricsSnapshot(completion_tokens=12, decode_tps=42.0, ttft_ms=30.0,
                                                finish_reason="stop").as_dict())
    slow = history.create_conversation("slow")
    history.add_message(slow.id, "user", "hi")
    history.add_message(slow.id, "assistant", "cut", finish_reason="length",
                        figures=MetricsSnapshot(completion_tokens=400, decode_tps=7.5, ttft_ms=900.0,
                                                finish_reason="length").as_dict())
    history.close()
    w = app.open()
    c = w.controller
    with qtbot.waitSignal(c.conversation_opened, timeout=10_000):
        c.open_conversation(fast.id)
    assert w.sidebar.text("decode") == "42.0 tok/s" and w.sidebar.text("tokens").startswith("12 tokens")
    assert w.sidebar.plot.points  # the stored answer's rate, drawn
    with qtbot.waitSignal(c.conversation_opened, timeout=10_000):
        c.open_conversation(slow.id)
    assert w.sidebar.text("decode") == "7.5 tok/s" and w.sidebar.text("tokens").startswith("400 tokens")
    with qtbot.waitSignal(c.conversation_opened, timeout=10_000):
        c.new_conversation()
    assert w.sidebar.text("decode") == "—" and w.sidebar.text("tokens") == "—" and not w.sidebar.plot.points
