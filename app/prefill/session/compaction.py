"""Compaction run: the model summarises a chat that outgrows its context, and the chat goes on.

The rules (when, the request, what the model reads after) are engine/prompt/compaction.py's; this
runs the summary through whatever answers (`summarise`) and says what it did (`Summary`). The turns
folded stay where they are, shown and stored; undoing a compaction is dropping its summary. Qt-free,
shared by the window (its engine worker runs it), the terminal (--overflow summarise, /compact) and
the server's opt-in `compaction` field (server/compaction.py runs the same request on its slots).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator

from prefill.engine.chat_backend import Event
from prefill.engine.events import Finished
from prefill.engine.message import Message
from prefill.engine.prompt.compaction import (
    HEADING,
    INSTRUCTION,
    Summary,
    due,
    model_view,
    summary_request,
    summary_tokens,
    system_with,
    threshold,
)
from prefill.engine.request import ChatRequest

# The rules are the engine's; callers of the session take them from here with the run
__all__ = ["HEADING", "INSTRUCTION", "CompactionError", "Summary", "due", "model_view", "summarise", "summary_tokens",
           "system_with", "threshold"]

Streamer = Callable[[ChatRequest, threading.Event | None], Iterator[Event]]


class CompactionError(Exception):
    """The model wrote no summary (stopped, cut off, or nothing to fold): the chat is left as it was."""


def summarise(
    stream: Streamer, request: ChatRequest, count_tokens: Callable[[ChatRequest], int | None], n_ctx: int,
    cancel: threading.Event | None = None,
) -> Generator[Event, None, Summary]:
    """Have the model summarise `request`'s conversation (its messages: the system prompt, then the
    turns to fold; no new user turn) in a context of `n_ctx`. Yields the backend's events as the
    summary streams; returns the Summary.

    Raises:
        CompactionError: nothing to fold, or the model was stopped or wrote nothing.
        Whatever the backend raises.
    """
    system = next((m.content for m in request.messages if m.role == "system"), "")
    turns = [m for m in request.messages if m.role != "system"]
    if not any(m.role == "assistant" for m in turns):
        raise CompactionError("there is nothing to summarise yet: no answer in this chat")
    before = count_tokens(request.with_messages([*request.messages, Message("user", "")])) or 0
    began = time.perf_counter()
    end: Finished | None = None
    for ev in stream(summary_request(request, n_ctx), cancel):
        if isinstance(ev, Finished):
            end = ev
        yield ev
    if end is None or end.reason == "cancelled":
        raise CompactionError("the summary was stopped: the chat is left as it was")
    text = end.text.strip()
    if not text:
        raise CompactionError("the model wrote no summary: the chat is left as it was")
    after = count_tokens(request.with_messages([system_with(system, text), Message("user", "")])) or 0
    return Summary(text, len(turns), sum(m.role == "user" for m in turns), before, after,
                   (time.perf_counter() - began) * 1000, end.metrics.completion_tokens)

