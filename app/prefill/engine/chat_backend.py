"""What serves a conversation: the local engine, one slot of the server's batch, or a remote endpoint.

Each streams the same events (PrefillDone, Token…, MetricsSnapshot…, Finished), so the window
and the CLI treat them alike; what one cannot measure it leaves unknown rather than zero.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Protocol

from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.message import Message
from prefill.engine.settings import OverflowSettings, SamplingSettings
from prefill.engine.template import TemplateOptions

Event = PrefillDone | Token | MetricsSnapshot | Finished


class ChatBackend(Protocol):
    """A conversation's server. One thread streams from it at a time."""

    def stream(
        self,
        messages: Sequence[Message],
        sampling: SamplingSettings | None = None,
        overflow: OverflowSettings | None = None,
        cancel: threading.Event | None = None,
        options: TemplateOptions | None = None,
    ) -> Iterator[Event]:
        """Answer `messages`: PrefillDone, Token…, MetricsSnapshot…, Finished. `cancel` stops it."""
        ...

    def count_tokens(self, messages: Sequence[Message], options: TemplateOptions | None = None) -> int | None:
        """The prompt tokens of `messages`, or None where the prompt is written elsewhere (a remote)."""
        ...

    def kv_snapshot(self) -> MetricsSnapshot:
        """The KV cache's fill now (`kv_total` 0 when it cannot be seen)."""
        ...

    def close(self) -> None: ...
