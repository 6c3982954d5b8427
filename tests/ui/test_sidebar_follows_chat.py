"""The sidebar follows the open chat: its last answer's stored figures (its speed curve included), not the
last run; a new chat clears them; a refused request is said, not waited on; the context is the one that
runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QLabel

from prefill.engine.events import MetricsSnapshot
from prefill.store import HistoryStore
from prefill.ui.chat.sidebar.sidebar_plot import CURVE_KEY
from tests.ui.conftest import ANSWER_TIMEOUT, load, send, small_settings


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
    assert not w.sidebar.shows("decode") and not w.sidebar.shows("tokens") and not w.sidebar.plot.points


def test_a_reopened_chat_draws_the_curve_its_answer_was_written_with(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=48))
    load(qtbot, w, smollm2)
    send(qtbot, w, "Count from one to twenty in words, separated by commas.")
    live = list(w.sidebar.plot.segments)
    first = w.controller.conversation_id
    assert live and first is not None
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.new_conversation()
    assert not w.sidebar.plot.points
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(first)
    assert not w.sidebar.plot.average_only  # the kept curve, not the average drawn flat
    kept = [x for segment in w.sidebar.plot.segments for x in segment]
    assert kept == pytest.approx([x for segment in live for x in segment], abs=0.06)  # rounded as kept
    with HistoryStore(app.data / "history.sqlite3") as history:  # kept in the history, not only in this window
        answer = [m for m in history.messages(first) if m.role == "assistant"][-1]
    assert len(answer.figures[CURVE_KEY]) == len(live)


def test_a_refused_request_leaves_the_sidebar_saying_so_not_waiting(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(n_ctx=256, policy="stop", max_tokens=16))
    load(qtbot, w, smollm2)
    with qtbot.waitSignal(w.controller.busy_changed, timeout=ANSWER_TIMEOUT, check_params_cb=lambda b: not b):
        w.controller.send("Please remember this sentence about the weather in Paris. " * 30)  # ~300 tokens
    assert "too long" in w.notice.text()  # the banner says what to do
    state = w.sidebar.headline.state
    assert state.isVisible() and state.text().startswith("Not answered") and "too long" in state.text()
    assert "…" not in [label.text() for label in w.sidebar.findChildren(QLabel)]


def test_a_context_of_128_is_said_to_run_at_256(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(n_ctx=128))
    load(qtbot, w, smollm2)
    assert w.loaded is not None and w.loaded.n_ctx_asked == 128 and w.loaded.n_ctx == 256  # llama.cpp rounded up
    assert w.sidebar.text("context") == "256 tokens (asked for 128: llama.cpp rounds up)"
