"""What every backend's stream is made of: the events, and the one-stream-at-a-time rule.

The backends (the local engine, one slot of the server's batch, a remote endpoint) each take a
`ChatRequest` and stream the same events (PrefillDone, Token…, MetricsSnapshot…, Finished); the
protocol callers hold them by, and what each can do beyond that, is `prefill.session.capabilities`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prefill.engine.errors import EngineBusy
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token, ToolCalled

Event = PrefillDone | Token | ToolCalled | MetricsSnapshot | Finished


def one_at_a_time(busy: threading.Lock, events: Iterator[Event]) -> Iterator[Event]:
    """`events`, refused with EngineBusy while another stream holds `busy` (a backend's one lock)."""
    if not busy.acquire(blocking=False):
        raise EngineBusy("the engine is still answering another request")
    try:
        yield from events
    finally:
        busy.release()
