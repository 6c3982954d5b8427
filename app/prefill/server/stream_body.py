"""A streamed reply in any dialect: its chunks written by the dialect's `StepWriter`, driven here.

Each dialect says what a stream's head is, what a batch of its tokens writes (`step`: text, thinking,
the calls they finished) and what its end writes (`last`); this module drives that writer over a
`Generation`'s events on the event loop (`stream_body`), and lets the scheduler thread write the token
batches itself while the loop is not writing (`stream_response`, direct_writes.py). Both call the same
`step` of the same writer, one at a time, so the writer keeps its state (open blocks, calls counted)
as it would on one thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol

from prefill.engine.batch.request import BatchEvent, Failed
from prefill.engine.events import Finished
from prefill.server.core import Generation, Step
from prefill.server.generate import EventSourceResponse


class StepWriter(Protocol):
    """A dialect's stream of one `Generation` (`gen`)."""

    gen: Generation

    def head(self) -> str:
        """What the stream starts with, before any token ("" for nothing)."""
        ...

    def step(self, step: Step) -> str:
        """The text of a batch of events (its end left to `last`): on the loop, or on the scheduler thread."""
        ...

    async def last(self, end: Finished | Failed) -> str:
        """The stream's end: the finish reason and figures, or the failure. On the loop."""
        ...


async def stream_body(writer: StepWriter) -> AsyncIterator[str]:
    """The body: the head, then all the events that piled up in one chunk each (nothing held back, but a
    loop or a client that fell behind catches up with one write), then the end."""
    gen = writer.gen
    try:
        head = writer.head()
        if head:
            yield head
        async for events in gen.batches():
            step = gen.read(events)
            body = writer.step(step)
            if step.end is not None:
                body += await writer.last(step.end)
            if body:
                yield body
            if step.end is not None:
                return
    finally:
        gen.cancel()  # a no-op once finished; frees the slot when the client went away


def stream_response(writer: StepWriter, write_deadline_s: float, media_type: str = "text/event-stream",
                    on_close: Callable[[], None] | None = None) -> EventSourceResponse:
    """The streamed response of `writer`, its token batches written by the scheduler thread where it can."""
    gen = writer.gen

    def tokens(events: list[BatchEvent]) -> str:
        return writer.step(gen.read(events))

    return EventSourceResponse(stream_body(writer), gen, write_deadline_s, media_type, on_close,
                               tokens=gen.token_writes(tokens))
