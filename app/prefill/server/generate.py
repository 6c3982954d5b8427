"""One request through the scheduler: events crossed onto the event loop, for any dialect's reply.

The scheduler thread hands each event to `EventStream.sink`, which queues it for the
server's loop (one `LoopWaker` wake-up, at the step's end, for all the streams served in it);
the response reads them in order. Whatever way the response ends (finished, failed, the
client gone, or a client that stopped reading), the request is cancelled, which frees its slot
before the scheduler's next step.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import RequestResponseCycle

from prefill.engine.batch.request import BatchEvent, BatchRequest, Failed, RequestHandle
from prefill.engine.errors import ContextOverflow, EngineError, QueueFull
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.llama.grammar_sampler import Constraint
from prefill.engine.prompt.thinking_budget import ThinkingLimit
from prefill.engine.settings import ServeSampling
from prefill.server.chunk_writer import CYCLE_KEY, writer_of
from prefill.server.connections import closer, disconnected
from prefill.server.direct_writes import DirectWrites
from prefill.server.errors import ApiError, busy, context_exceeded, server_error, unavailable
from prefill.server.loop_waker import LoopWaker

log = logging.getLogger(__name__)
RETRY_AFTER_S = 2  # what a client refused for a full queue is told to wait
WRITE_DEADLINE_S = 15.0  # a stream whose client takes nothing for this long has stopped reading
MAX_PENDING_EVENTS = 8192  # events the loop has not taken for one stream: past it, the request stops


class EventStream:
    """Scheduler events for one request, handed to the server's event loop.

    The scheduler thread appends to a deque and asks `waker` for a wake-up only when none
    is pending for this stream, so a loop that falls behind takes several events in one go.
    The first token and the end are urgent: they do not wait out the waker's interval. The prefill's
    event is dropped: no reply says it.
    """

    def __init__(self, waker: LoopWaker, tokens: bool = True):
        self.waker = waker
        self.tokens = tokens  # a non-streamed reply needs only the end: its text is in Finished
        self.overflow: Callable[[], None] | None = None  # called once when the loop falls MAX_PENDING behind
        self.on_end: Callable[[MetricsSnapshot], None] | None = None  # the answer's figures, once it ended
        self._pending: deque[BatchEvent] = deque()
        self._queued = False  # with the waker, not yet woken
        self._first_token = True  # none handed over yet: the first one is the client's TTFT
        self._waiter: asyncio.Future[None] | None = None  # `batches` waiting for the next wake-up
        self.direct: DirectWrites | None = None  # set by a response whose tokens the scheduler thread may write
        self._flush_queued = False  # with the waker, for the scheduler thread to write

    def sink(self, event: BatchEvent) -> None:  # on the scheduler thread
        if type(event) is Finished and self.on_end is not None:
            self.on_end(event.metrics)
        kind = type(event)
        # No reply says when its prompt was read (the end's figures count it); kept, the prefill's event would
        # take the stream back from the scheduler thread just before the first token.
        if kind is PrefillDone or (kind is Token and not self.tokens):
            return
        is_token = kind is Token
        urgent = not is_token or self._first_token
        self._first_token = self._first_token and not is_token
        direct = self.direct
        if direct is None:
            self._pending.append(event)
        elif direct.take(event, is_token):
            if not self._flush_queued:
                self._flush_queued = True
                self.waker.notify_direct(self, urgent)
            return
        if len(self._pending) == MAX_PENDING_EVENTS and self.overflow is not None:
            self.overflow()  # the response is stuck writing: stop decoding for it
        if not self._queued:
            self._queued = True
            self.waker.notify(self, urgent)
        elif urgent:
            self.waker.mark_urgent()

    def write_directly(self, cycle: RequestResponseCycle, render: Callable[[list[BatchEvent]], str]) -> DirectWrites:
        """Let the scheduler thread write this stream's tokens to `cycle`'s connection while the loop is
        not writing (direct_writes.py); `render`: the dialect's text for a batch of token events."""
        self.direct = DirectWrites(cycle, self._pending, render)
        return self.direct

    def flush(self) -> None:  # on the scheduler thread, at its step's end: a stream the scheduler thread writes
        self._flush_queued = False
        assert self.direct is not None
        if not self.direct.flush() and not self._queued:  # handed back: the loop takes it from here
            self._queued = True
            self.waker.notify(self, True)

    def wake(self) -> None:  # on the loop; cleared first, so a later event queues the stream again
        self._queued = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def batches(self) -> AsyncGenerator[list[BatchEvent], None]:
        """Events as they come, all that piled up at once. It waits only when none is there: a wake-up
        always follows the event it is for, so none is missed (a future, not an `asyncio.Event`: fewer
        calls on the loop for every token)."""
        pending, loop, direct = self._pending, asyncio.get_running_loop(), self.direct
        while True:
            if direct is not None:  # none while the scheduler thread writes this stream (direct_writes.py)
                events = direct.collect()
            else:
                events = []
                while pending:
                    events.append(pending.popleft())
            if events:
                yield events
                continue
            if direct is not None:
                direct.arm()  # the scheduler thread may write the tokens while the loop waits
            self._waiter = loop.create_future()
            await self._waiter
            self._waiter = None


class Submits(Protocol):
    """Where a request goes: a `BatchScheduler`, or a pool's `ChatModel` (which counts it until it ends)."""

    def submit(self, request: BatchRequest) -> RequestHandle: ...


def submit(scheduler: Submits, prompt: Sequence[int], sampling: ServeSampling, stream: EventStream,
           label: str, owner: str, constraint: Constraint | None = None,
           thinking: ThinkingLimit | None = None) -> RequestHandle:
    try:
        handle = scheduler.submit(BatchRequest(tuple(prompt), sampling, stream.sink, label, owner, constraint,
                                               thinking))
    except QueueFull as e:
        raise busy(str(e), RETRY_AFTER_S) from None
    except ContextOverflow as e:
        raise context_exceeded(
            f"This model's context is {e.n_ctx} tokens per request; the prompt is {e.prompt_tokens} tokens, "
            "leaving no room for an answer. Shorten the prompt or start the server with a larger --ctx."
        ) from None
    except EngineError as e:
        raise unavailable(str(e)) from None
    stream.overflow = handle.cancel
    return handle


def sse_event(name: str, obj: object) -> str:
    """One named SSE event (`event:` and `data:` lines), as Anthropic's and the Responses streams send them."""
    return f"event: {name}\ndata: {json.dumps(obj, ensure_ascii=False, separators=(',', ':'))}\n\n"


class Cancels(Protocol):
    """What a response cancels when its client stops reading: a request's handle, or a `Generation`
    (the answer it has in hand)."""

    def cancel(self) -> None: ...


@dataclass(frozen=True)
class TokenWrites:
    """What the scheduler thread needs to write a stream's tokens itself: the stream, and its dialect's
    text for a batch of token events (direct_writes.py)."""

    stream: EventStream
    render: Callable[[list[BatchEvent]], str]


class EventSourceResponse(StreamingResponse):
    """The streamed response of one request: SSE, or another `media_type` (Ollama's NDJSON). A client
    that takes no data for `write_deadline_s` has stopped reading: its request is cancelled (its slot
    is free at the scheduler's next step) and its connection dropped, with whatever was buffered for it."""

    def __init__(self, body: AsyncIterator[str], handle: Cancels, write_deadline_s: float,
                 media_type: str = "text/event-stream", on_close: Callable[[], None] | None = None,
                 tokens: TokenWrites | None = None):
        super().__init__(body, media_type=media_type,
                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.handle = handle
        self.write_deadline_s = write_deadline_s
        self.on_close = on_close  # called once the response has ended, however it ended
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Starlette's StreamingResponse, its per-chunk layers left out: the start and the end go through
        the middleware (`send`), the chunks between to the connection's writer (chunk_writer.py); the body
        is read in this task, a client's disconnect is heard by a second one."""
        write = writer_of(scope, send)
        loop = asyncio.get_running_loop()
        direct = self._direct(scope)
        with anyio.CancelScope() as cancel:
            watch = _WriteWatch(self.write_deadline_s, cancel)
            gone = asyncio.ensure_future(_hang_up(receive, cancel))
            try:
                watch.began = loop.time()
                await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
                watch.began = None  # a prompt's prefill, or a long think, is no stalled write
                async for chunk in self.body_iterator:
                    watch.began = loop.time()
                    await write({"type": "http.response.body", "body": chunk.encode() if isinstance(chunk, str)
                                 else chunk, "more_body": True})
                    watch.began = None
                watch.began = loop.time()
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            finally:
                watch.stop()
                gone.cancel()
                if direct is not None:
                    direct.close()
        try:
            if watch.stalled:
                self.handle.cancel()
                log.info("closed a stream whose client stopped reading for %.0f s", self.write_deadline_s)
                close = closer(scope)
                if close is not None:
                    await close()
        finally:
            if self.on_close is not None:
                self.on_close()


    def _direct(self, scope: Scope) -> DirectWrites | None:
        """The scheduler thread's writer of the tokens, where the connection and the dialect allow it."""
        cycle = scope.get("extensions", {}).get(CYCLE_KEY)
        if self.tokens is None or cycle is None or not DirectWrites.possible(cycle):
            return None
        return self.tokens.stream.write_directly(cycle, self.tokens.render)


async def _hang_up(receive: Receive, cancel: anyio.CancelScope) -> None:
    """Cancels a streamed response when its client disconnects."""
    await disconnected(receive)
    cancel.cancel()


class _WriteWatch:
    """A stream's stalled-write check: one timer per stream, not a deadline per write. A write is stamped
    when it starts and cleared when it returns; every quarter of the deadline the timer looks for one
    started longer ago (a stall is caught between 1 and 1.25 deadlines) and cancels the response. A cancel
    scope per write cost ~18 µs, a hundred times the stamp, on the loop whose every microsecond a decoding
    step on the same cores waits for."""

    def __init__(self, deadline_s: float, cancel: anyio.CancelScope):
        self.loop = asyncio.get_running_loop()
        self.deadline_s = deadline_s
        self.cancel = cancel
        self.began: float | None = None  # when the write under way started
        self.stalled = False
        self._timer = self.loop.call_later(deadline_s / 4, self._look)

    def _look(self) -> None:
        if self.began is not None and self.loop.time() - self.began >= self.deadline_s:
            self.stalled = True
            self.cancel.cancel()
        else:
            self._timer = self.loop.call_later(self.deadline_s / 4, self._look)

    def stop(self) -> None:
        self._timer.cancel()


async def finished(handle: RequestHandle, stream: EventStream, request: Request) -> Finished:
    """The request's `Finished`, for a whole (non-streamed) reply in any dialect. A client that disconnects
    while waiting cancels the request (499); a `Failed` is a server error.
    """
    gone = asyncio.ensure_future(disconnected(request.receive))
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
                    return ev
                if isinstance(ev, Failed):
                    raise server_error(ev.message)
    finally:
        gone.cancel()
        handle.cancel()
        await events.aclose()
