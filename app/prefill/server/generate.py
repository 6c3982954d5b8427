"""One request through the scheduler: events crossed onto the event loop, then SSE or one body.

The scheduler thread hands each event to `EventStream.sink`, which schedules it
onto the server's loop; the response reads them in order. Whatever way the
response ends (finished, failed, or the client gone), the request is cancelled,
which frees its slot before the scheduler's next step.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

from starlette.requests import Request

from prefill.engine.batch_request import BatchEvent, BatchRequest, Failed, RequestHandle
from prefill.engine.batch_runtime import ServeSampling
from prefill.engine.batch_scheduler import BatchScheduler
from prefill.engine.errors import ContextOverflow, EngineError
from prefill.engine.events import Finished, Token
from prefill.server.errors import ApiError, context_exceeded, server_error, unavailable
from prefill.server.reasoning import AnswerSplitter
from prefill.server.shapes import SSE_DONE, Reply, sse


class EventStream:
    """Scheduler events for one request, handed to the server's event loop.

    The scheduler thread appends to a deque and wakes the loop only when no wake-up is
    pending, so a loop that falls behind takes several events in one go (one write).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, tokens: bool = True):
        self.loop = loop
        self.tokens = tokens  # a non-streamed reply needs only the end: its text is in Finished
        self._pending: deque[BatchEvent] = deque()
        self._wake_pending = False
        self._ready = asyncio.Event()

    def sink(self, event: BatchEvent) -> None:  # on the scheduler thread
        if not self.tokens and type(event) is Token:
            return
        self._pending.append(event)
        if not self._wake_pending:
            self._wake_pending = True
            try:
                self.loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop has closed (the server stopped): nobody reads this stream
                pass

    def _wake(self) -> None:  # on the loop; cleared first, so a later event schedules its own wake
        self._wake_pending = False
        self._ready.set()

    async def batches(self) -> AsyncGenerator[list[BatchEvent], None]:
        """Events as they come, all that piled up at once."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            events = []
            while self._pending:
                events.append(self._pending.popleft())
            if events:
                yield events


def submit(scheduler: BatchScheduler, prompt: Sequence[int], sampling: ServeSampling,
           stream: EventStream, label: str) -> RequestHandle:
    try:
        return scheduler.submit(BatchRequest(tuple(prompt), sampling, stream.sink, label))
    except ContextOverflow as e:
        raise context_exceeded(
            f"This model's context is {e.n_ctx} tokens per request; the prompt is {e.prompt_tokens} tokens, "
            "leaving no room for an answer. Shorten the prompt or start the server with a larger --ctx."
        ) from None
    except EngineError as e:
        raise unavailable(str(e)) from None


async def stream_reply(reply: Reply, handle: RequestHandle, stream: EventStream,
                       splitter: AnswerSplitter, include_usage: bool) -> AsyncIterator[str]:
    """The SSE body: a first chunk, one per piece of text, the last with the finish reason,
    the usage chunk when asked, then [DONE]. A failure is sent as an error event."""
    try:
        if reply.kind == "chat":
            yield sse(reply.chunk(first=True))
        async for events in stream.batches():
            out = []
            for ev in events:
                if type(ev) is Token:
                    reasoning, content = splitter.feed(ev.text)
                    if reasoning or content:
                        out.append(sse(reply.chunk(content, reasoning)))
                elif isinstance(ev, Finished):
                    reasoning, content = splitter.flush()
                    if reasoning or content:
                        out.append(sse(reply.chunk(content, reasoning)))
                    out.append(sse(reply.chunk(reason=ev.reason, m=ev.metrics)))
                    if include_usage:
                        out.append(sse(reply.usage_chunk(ev.metrics)))
                    out.append(SSE_DONE)
                    yield "".join(out)
                    return
                elif isinstance(ev, Failed):
                    out.append(sse(server_error(ev.message).body()))
                    out.append(SSE_DONE)
                    yield "".join(out)
                    return
            if out:
                yield "".join(out)
    finally:
        handle.cancel()  # a no-op once finished; frees the slot when the client went away


async def full_reply(reply: Reply, handle: RequestHandle, stream: EventStream,
                     splitter: AnswerSplitter, request: Request) -> dict[str, object]:
    """The non-streamed body. A client that disconnects while waiting cancels the request."""
    gone = asyncio.ensure_future(_disconnected(request))
    events = stream.batches()
    try:
        while True:
            nxt = asyncio.ensure_future(anext(events))
            await asyncio.wait({nxt, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not nxt.done():
                nxt.cancel()
                await asyncio.gather(nxt, return_exceptions=True)  # the generator is at rest again
                raise ApiError(499, "The client closed the request.")
            for ev in nxt.result():
                if isinstance(ev, Finished):
                    r1, c1 = splitter.feed(ev.text)
                    r2, c2 = splitter.flush()
                    return reply.full(c1 + c2, r1 + r2, ev.reason, ev.metrics)
                if isinstance(ev, Failed):
                    raise server_error(ev.message)
    finally:
        gone.cancel()
        handle.cancel()
        await events.aclose()


async def _disconnected(request: Request) -> None:
    """Returns when the client disconnects (the body has been read, so nothing else arrives)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
