"""What serves a conversation: the local engine, one slot of the server's batch, or a remote endpoint.

Each takes a `ChatRequest` and streams the same events (PrefillDone, Token…, MetricsSnapshot…,
Finished), so the window, the terminal and the server treat them alike; what one cannot measure it
leaves unknown rather than zero. Which one answers is chosen by `prefill.session.backends`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Protocol

from prefill.engine.errors import EngineBusy
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token, ToolCalled
from prefill.engine.request import ChatRequest

Event = PrefillDone | Token | ToolCalled | MetricsSnapshot | Finished


class ChatBackend(Protocol):
    """A conversation's server. One thread streams from it at a time."""

    def stream(self, request: ChatRequest, cancel: threading.Event | None = None) -> Iterator[Event]:
        """Answer `request`: PrefillDone, Token…, MetricsSnapshot…, Finished. `cancel` stops it."""
        ...

    def count_tokens(self, request: ChatRequest) -> int | None:
        """The prompt tokens of the request, or None where the prompt is written elsewhere (a remote)."""
        ...

    def kv_snapshot(self) -> MetricsSnapshot:
        """The KV cache's fill now (`kv_total` 0 when it cannot be seen)."""
        ...

    def close(self) -> None: ...


def one_at_a_time(busy: threading.Lock, events: Iterator[Event]) -> Iterator[Event]:
    """`events`, refused with EngineBusy while another stream holds `busy` (a backend's one lock)."""
    if not busy.acquire(blocking=False):
        raise EngineBusy("the engine is still answering another request")
    try:
        yield from events
    finally:
        busy.release()
