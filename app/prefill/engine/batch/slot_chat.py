"""The window's chat as one request among the server's: a conversation streamed through one slot
of the `BatchScheduler` that also serves HTTP clients.

`SlotChat.stream` yields what `ChatEngine.stream` yields, so the window cannot tell them apart
except by the figures: the KV fill it reports is the whole shared cache (every slot's cells out
of every slot's context), since that is what the window's answer competes for. Prefix reuse is
the scheduler's: a continued conversation goes back to the slot that holds its start.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import fields, replace

from prefill.engine.batch.request import BatchEvent, BatchRequest, Failed, RequestHandle
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.chat_backend import Event, one_at_a_time
from prefill.engine.errors import EngineError, TemplateError
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.model_chat import ModelChat
from prefill.engine.prompt.overflow import fit_messages
from prefill.engine.request import ChatRequest
from prefill.engine.settings import SamplingSettings, ServeSampling

LABEL = "window"  # how the slots table names the window's request
OWNER = "window"  # the window's chat reuses only its own cached conversations, never a client's
SNAPSHOT_EVERY_S = 0.25
POLL_S = 0.05  # how often a waiting stream looks at its cancel flag


class SlotChat:
    """A chat served by `scheduler`, which someone else owns and closes. One thread streams at a time."""

    def __init__(self, scheduler: BatchScheduler):
        self.scheduler = scheduler
        model = scheduler.model
        self.path, self.header, self.runtime, self.device = model.path, model.header, model.runtime, model.device
        self.bytes_per_cell = model.bytes_per_cell
        self.n_ctx = scheduler.n_ctx_seq
        self.chat = ModelChat(self.header.chat_template, self.runtime)
        self.format, self.reasoning = self.chat.format, self.chat.reasoning
        self._busy = threading.Lock()

    def close(self) -> None:
        """Nothing of its own to free: the scheduler (and the model) belong to the server."""

    # --- what it can do (chat_backend.ChatBackend): the server's model, as the server set it up ----
    @property
    def local(self) -> SlotChat:
        return self

    @property
    def speculates(self) -> None:
        return None  # the scheduler's, set when the server started

    @property
    def sees_images(self) -> None:
        return None  # the scheduler's projector, set when the server started

    @property
    def disk_cache(self) -> None:
        return None  # the slots keep their own prefixes

    @property
    def endpoint(self) -> None:
        return None

    def _prompt(self, request: ChatRequest) -> tuple[str, list[int]]:
        # llama.cpp's tokenizer reads the vocabulary only: safe beside the decoding thread, not
        # after the server freed the model.
        if self.scheduler.closed:
            raise EngineError("the server is shutting down")
        return self.chat.prompt(request)

    def count_tokens(self, request: ChatRequest) -> int:
        return len(self._prompt(request)[1])

    def kv_snapshot(self) -> MetricsSnapshot:
        snap = self.scheduler.snapshot()
        used = sum(s.kv_cells for s in snap.slots)
        total = self.n_ctx * len(snap.slots)
        return MetricsSnapshot(kv_used=used, kv_total=total, kv_bytes=used * self.bytes_per_cell,
                               kv_bytes_total=total * self.bytes_per_cell)

    def stream(self, request: ChatRequest, cancel: threading.Event | None = None) -> Iterator[Event]:
        """As `ChatEngine.stream`, through a slot of the shared batch.

        Raises:
            ContextOverflow: the prompt does not fit one slot and the policy is `stop`.
            TemplateError: the chat template refused or failed.
            EngineError: the scheduler failed the request (or is shutting down).
            EngineBusy: another request of this chat is running.
        """
        return one_at_a_time(self._busy, self._stream(request, cancel))

    def _stream(self, request: ChatRequest, cancel: threading.Event | None) -> Iterator[Event]:
        messages, sampling, overflow = request.messages, request.sampling, request.overflow
        if not messages or messages[-1].role not in ("user", "tool"):  # "tool": a tool loop's next round
            raise TemplateError("a chat request must end with a user message or a tool result")
        reserve = overflow.reserve_for(sampling.max_tokens, self.n_ctx)
        fitted = fit_messages(messages, lambda ms: self.count_tokens(request.with_messages(ms)), self.n_ctx,
                              reserve, overflow.policy)
        text, prompt = self._prompt(request.with_messages(fitted.messages))
        if not prompt or not text.strip():
            raise TemplateError("the chat template rendered an empty prompt: there is nothing to send")
        events: queue.SimpleQueue[BatchEvent] = queue.SimpleQueue()
        handle = self.scheduler.submit(BatchRequest(tuple(prompt), _serve_sampling(sampling, self.chat.stops(sampling)),
                                                    events.put, LABEL, OWNER, self.chat.constraint(request),
                                                    self.chat.thinking_limit(text, request)))
        try:
            split = self.chat.reader(text, handle.clock, request=request)
            yield from self._relay(handle, events, cancel, fitted.dropped, fitted.note, split)
        finally:
            handle.cancel()  # a no-op once it ended; frees the slot if the caller stopped reading

    def _relay(
        self, handle: RequestHandle, events: queue.SimpleQueue[BatchEvent], cancel: threading.Event | None,
        dropped: tuple[int, ...], note: str, split: AnswerSplit,
    ) -> Iterator[Event]:
        # The split counts thinking into the request's clock, which the scheduler reads only to time
        # tokens; the figures below take the counts from it once this thread has seen every token.
        clock = handle.clock
        next_snapshot = time.perf_counter() + SNAPSHOT_EVERY_S
        while True:
            try:
                ev = events.get(timeout=POLL_S)
            except queue.Empty:
                ev = None
            if cancel is not None and cancel.is_set():
                handle.cancel()  # the scheduler ends it with Finished("cancelled") at its next step
            if ev is None:
                continue
            if type(ev) is Token:
                now = time.perf_counter()
                yield from split.token(ev.text, ev.n_tokens, now)
                if now >= next_snapshot:
                    next_snapshot = now + SNAPSHOT_EVERY_S
                    yield self._with_kv(clock.snapshot(0, 0, 0, live=True))
            elif isinstance(ev, PrefillDone):
                yield replace(ev, dropped_messages=dropped, overflow_note=note)
            elif isinstance(ev, Failed):
                raise EngineError(ev.message)
            elif isinstance(ev, Finished):
                yield from split.end("", ev.metrics.completion_tokens, ev.reason)
                metrics = replace(self._with_kv(ev.metrics), reasoning_tokens=clock.reasoning_tokens,
                                  answer_ttft_ms=clock.answer_ttft_ms)
                yield split.finished(ev.reason, metrics)
                return

    def _with_kv(self, m: MetricsSnapshot) -> MetricsSnapshot:
        kv = self.kv_snapshot()
        return replace(m, kv_used=kv.kv_used, kv_total=kv.kv_total, kv_bytes=kv.kv_bytes,
                       kv_bytes_total=kv.kv_bytes_total)


def _serve_sampling(s: SamplingSettings, stops: tuple[str, ...]) -> ServeSampling:
    """The window's sampling settings as a scheduler request takes them, with every stop string."""
    values = {f.name: getattr(s, f.name) for f in fields(SamplingSettings)}
    values["stop"] = stops
    return ServeSampling(**values)
