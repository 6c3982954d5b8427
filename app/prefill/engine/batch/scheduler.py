"""Continuous batching: several requests decode together in one llama.cpp batch.

One thread owns the `BatchRuntime`. Each step it builds one `llama_batch` holding
the next token of every decoding slot and, in the room left, prompt chunks of the
slots still prefilling; one `llama_decode`; then each finished row is sampled with
its own request's sampler chain. A request waits in a FIFO queue while all slots
are busy. A new request goes to the idle slot whose cached tokens share the longest
prefix with its prompt, and only what follows that prefix is evaluated. A slot's prompt that another
request displaces is kept in host memory (prompt_cache.py) and copied back into a slot, before the
prefill, for the request that shares the most with it. A new conversation that goes to an empty slot
takes the start it shares with another idle slot (a system prompt) from that slot's state.

With `speculative="ngram"` (or "draft", with a draft model), a slot whose request samples greedily
follows its token with a draft in the same batch and keeps the part the model agrees with
(slot_drafts.py); every token it keeps still goes through `_accept`, one by one, so a rejected draft
never reaches a client. Every step is timed whole (`StepRates`): a slot drafts only while its drafted
steps realise more tokens per second than plain steps of as many rows, and a plain step now and then
keeps that rate known (engine/drafts/step_rates.py).
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from prefill.engine.batch.prompt_cache import MIN_TOKENS, CacheEntry, Found, PromptCache, Spill
from prefill.engine.batch.request import BatchEvent, BatchRequest, Failed, RequestHandle
from prefill.engine.batch.runtime import LoadedBatchModel, TokenBatch
from prefill.engine.batch.slot_draft_model import SlotDraftModel
from prefill.engine.batch.slot_drafts import (
    NgramSlots,
    SeqRows,
    SlotDrafts,
    SlotDraftSource,
    check_mode,
    runtime_why_not,
    slot_why_not,
    verify,
)
from prefill.engine.batch.snapshot import BatchSnapshot, RateMeter, SlotSnapshot, recent_rate
from prefill.engine.drafts import rules
from prefill.engine.drafts.batch_drift import TieMargin
from prefill.engine.drafts.draft_length import DecodeCosts, share
from prefill.engine.drafts.step_rates import PROBE_DRAFT, DraftGate, StepRates
from prefill.engine.errors import ContextOverflow, EngineError, QueueFull
from prefill.engine.events import Finished, FinishReason, MetricsSnapshot, PrefillDone, Token
from prefill.engine.prompt.answer_decoder import AnswerDecoder
from prefill.engine.speculation import DRAFT_MAX
from prefill.engine.vision.projector import Projector, is_image_token
from prefill.engine.vision.prompt_images import run_end, run_start, text_before_image

log = logging.getLogger(__name__)
PUBLISH_EVERY_S = 0.1
QUEUED_PER_SLOT = 8  # the default bound of the queue behind the slots
# An empty slot takes the prefix another idle slot shares with its request by copying that slot's state
# when the prefix is at least this long and at least 1/SEED_CELLS_PER_TOKEN of the cells copied.
SEED_MIN_TOKENS = 16
SEED_CELLS_PER_TOKEN = 16


def default_prompt_cache(kv_cells: int, bytes_per_cell: int) -> int:
    """The prompt cache's bound when none is given: as many bytes as the slots' KV cache (`kv_cells` of
    `bytes_per_cell`), so it keeps as many tokens again as the slots hold."""
    return kv_cells * bytes_per_cell


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass(eq=False)
class _Slot:
    index: int  # also its llama.cpp sequence id
    tokens: list[int] = field(default_factory=list)  # exactly what its sequence holds
    prompt_len: int = 0  # of the last request it served (the rest of `tokens` is that answer)
    owner: str = ""  # of the conversation `tokens` hold: another owner's request starts it afresh
    job: _Job | None = None
    last_used: float = 0.0
    kept: CacheEntry | None = None  # the prompt cache's entry for what `tokens` hold, stored ahead (`_keep_ahead`)


def _taken_first(s: _Slot) -> tuple[bool, float]:
    """Which idle slot a conversation that continues none takes (the largest): an empty one, else the least
    recently used."""
    return not s.tokens, -s.last_used


@dataclass(eq=False)
class _Job:
    slot: _Slot
    handle: RequestHandle
    pending: list[int]  # prompt tokens not yet in the cache
    cached: int  # prompt tokens reused from the slot's cache
    answer: AnswerDecoder  # its sampler, text and stop strings
    state: Literal["prefill", "decode"] = "prefill"
    fed: int = 0  # of `pending`, already in a batch
    index: int = -1  # this step's batch row whose logits are ours
    last: int = -1  # sampled, not yet evaluated
    n_gen: int = 0
    pieces: list[str] = field(default_factory=list)
    drafts: SlotDrafts | None = None  # None: this request decodes one token per step
    draft: list[int] = field(default_factory=list)  # this step's, after `last` in the sequence
    draft_at: int = -1  # the batch row of its first token
    # read once, not every step
    times: list[float] = field(init=False)  # the request clock's token times
    sampler: ctypes.c_void_p = field(init=False)
    max_tokens: int = field(init=False)
    stop_on_eog: bool = field(init=False)

    def __post_init__(self) -> None:
        self.times = self.handle.clock.token_times
        self.sampler = self.answer.sampler
        self.max_tokens = self.answer.max_tokens
        self.stop_on_eog = self.answer.stop_on_eog


class BatchScheduler:
    """Serves requests on `model`'s slots from a thread of its own. Thread-safe to call.

    `on_snapshot` (optional) receives a BatchSnapshot on the scheduler thread a few
    times a second while requests run, and once when it goes idle; it must not block.
    `on_events` (optional, settable) is called on the scheduler thread once the events of a
    step are with their sinks: just before the next `llama_decode` (with False) and when the
    scheduler falls idle or stops (True). A server hands its streams over there, while
    llama.cpp works without the GIL; it must not block.
    `speculative` is "off", "ngram" (drafts from the text itself for greedy requests) or "draft"
    (from `draft_model`, which the scheduler then owns and closes); `draft_max` bounds a draft;
    `speculation_note` says why the slots cannot speculate on this model at all ("" when they can).
    `prompt_cache_bytes` bounds the prompts kept in host memory once they leave their slot (0: none kept;
    None: as many bytes as the slots' own KV cache, `default_prompt_cache`); those it lets go are written to
    `prompt_spill` (on disk) when there is one, by a thread of the cache's own (no step waits for the disk).
    """

    def __init__(self, model: LoadedBatchModel, on_snapshot: Callable[[BatchSnapshot], None] | None = None,
                 max_queued: int = 0, speculative: str = "off", draft_model: SlotDraftModel | None = None,
                 draft_max: int = DRAFT_MAX, prompt_cache_bytes: int | None = None,
                 prompt_spill: Spill | None = None):
        self.model = model
        self.speculative = check_mode(speculative)
        if (speculative == "draft") != (draft_model is not None):
            raise ValueError('a draft model goes with speculative="draft", and only with it')
        self.speculation_note = runtime_why_not(model.runtime) if speculative != "off" else ""
        if self.speculation_note:
            log.info("speculative decoding (%s) is off: %s", speculative, self.speculation_note)
        self._speculate = speculative != "off" and not self.speculation_note
        self.draft_max = draft_max
        self.keep_ahead = True  # store an idle slot's conversation before a request displaces it (`_keep_ahead`)
        self.draft_model = draft_model if self._speculate else None
        if draft_model is not None and self.draft_model is None:
            draft_model.close()  # it could never draft here: its memory goes back at once
        self._source: SlotDraftSource | None = (
            (self.draft_model or NgramSlots()) if self._speculate else None)
        self.decode_costs = DecodeCosts()  # what this model's decodes cost, drafts and all (scheduler thread)
        self.rates = StepRates()  # what its steps realise, with drafts and without (scheduler thread)
        # how often each kind of draft was right, over every slot and request: one model, learnt 4x as fast
        self._judged: dict[int, list[float]] = {}
        self.tie_margin = TieMargin()  # how far its batched logits drift from one-token ones (measured once)
        self.max_queued = max_queued or QUEUED_PER_SLOT * model.runtime.n_seq  # waiting, beyond the slots
        self.runtime = rt = model.runtime
        self.n_ctx_seq = rt.n_ctx_seq
        self.n_slots = rt.n_seq
        self.prompt_cache = PromptCache(
            default_prompt_cache(rt.n_ctx, model.bytes_per_cell) if prompt_cache_bytes is None else prompt_cache_bytes,
            prompt_spill)
        self.projector: Projector | None = None  # lets prompts hold images; set by the server, freed by close()
        self._on_snapshot = on_snapshot
        self.on_events: Callable[[bool], None] | None = None
        self._slots = [_Slot(i) for i in range(rt.n_seq)]
        self._active: list[_Job] = []  # the jobs in slots, in slot order
        self._check_cancels = False  # a handle was cancelled since the last look
        self._queue: deque[RequestHandle] = deque()
        self._cv = threading.Condition()
        self._stopping = False
        self._batch = TokenBatch(rt.n_batch, rt.n_seq)
        self._rate = RateMeter()
        self._served = self._cancelled = self._steps = self._peak_seqs = self._peak_queued = 0
        self._emitted = self._drafted = self._draft_accepted = 0
        self._next_publish = 0.0
        self._snapshot = self._build_snapshot(time.perf_counter())
        self._thread = threading.Thread(target=self._run, name="prefill-batch", daemon=True)
        self._thread.start()

    # --- any thread ------------------------------------------------------------------
    def submit(self, request: BatchRequest) -> RequestHandle:
        """Queue a request; its events go to `request.sink` from the scheduler thread.

        Raises:
            ContextOverflow: the prompt leaves no room for one generated token in a slot.
            QueueFull: every slot is busy and `max_queued` requests already wait.
            EngineError: an empty prompt, or the scheduler is closed.
        """
        n = len(request.prompt)
        if n == 0:
            raise EngineError("the prompt is empty")
        if n >= self.n_ctx_seq:
            raise ContextOverflow(n, 1, self.n_ctx_seq)
        handle = RequestHandle(request, self._wake)
        with self._cv:
            if self._stopping:
                raise EngineError("the server is shutting down")
            if len(self._queue) - self._idle_count() >= self.max_queued:
                raise QueueFull(f"all {self.n_slots} slots are busy and {self.max_queued} requests wait already")
            self._queue.append(handle)
            self._peak_queued = max(self._peak_queued, len(self._queue) - self._idle_count())
            self._cv.notify()
        return handle

    @property
    def closed(self) -> bool:
        """Closing or closed: the model may be freed, so nothing may use its runtime."""
        return self._stopping

    def snapshot(self) -> BatchSnapshot:
        """The latest published state (at most PUBLISH_EVERY_S old while busy)."""
        return self._snapshot

    def close(self) -> None:
        """Stop the thread; requests still queued or running get Failed. Frees the model, the draft
        source and the projector (the scheduler owns all three)."""
        with self._cv:
            self._stopping = True
            self._cv.notify()
        self._thread.join()
        self.prompt_cache.close()  # what waits for the disk is written: a server started next finds it
        self.runtime.close()
        if self._source is not None:
            self._source.close()
        if self.projector is not None:
            self.projector.close()

    def _wake(self) -> None:  # a handle was cancelled
        with self._cv:
            self._check_cancels = True
            self._cv.notify()

    def _idle_count(self) -> int:
        return self.n_slots - len(self._active)

    # --- the scheduler thread ------------------------------------------------------------
    def _run(self) -> None:
        try:
            while True:
                if not self._active:
                    self._events_out(idle=True)
                    self._keep_ahead()
                    self._publish(time.perf_counter(), force=True)
                # The lock is taken only when there is something to look at: a queue, a cancel, no work.
                if self._queue or self._check_cancels or self._stopping or not self._active:
                    if not self._take_work():
                        break
                try:
                    self._step()
                except Exception as e:  # keep serving: fail what was running, start clean
                    log.exception("batch step failed")
                    for j in list(self._active):
                        self._fail(j, f"the engine failed: {e}")
                now = time.perf_counter()
                if now >= self._next_publish:
                    self._publish(now)
        finally:
            with self._cv:
                queued, self._queue = list(self._queue), deque()
            for h in queued:
                self._emit(h, Failed("the server is shutting down"))
            for j in list(self._active):
                self._fail(j, "the server is shutting down")
            self._events_out(idle=True)

    def _events_out(self, idle: bool) -> None:
        hook = self.on_events
        if hook is not None:
            try:
                hook(idle)
            except Exception:
                log.exception("on_events failed")

    def _take_work(self) -> bool:
        """Wait for work; drop cancelled requests; admit queued ones into idle slots.
        False when the scheduler is stopping."""
        with self._cv:
            while not self._stopping and not self._queue and not self._active and not self._check_cancels:
                self._cv.wait()
            if self._stopping:
                return False
            cancels, self._check_cancels = self._check_cancels, False  # cleared before looking
            dropped = [h for h in self._queue if h.cancelled] if cancels else []
            if dropped:
                self._queue = deque(h for h in self._queue if not h.cancelled)
            admitted = [self._queue.popleft() for _ in range(min(self._idle_count(), len(self._queue)))]
        for h in dropped:
            self._served += 1
            self._cancelled += 1
            self._publish(time.perf_counter(), force=True)
            self._emit(h, Finished("cancelled", "", h.clock.snapshot(0, self.n_ctx_seq, 0, "cancelled")))
        if cancels:
            for j in [j for j in self._active if j.handle.cancelled]:
                self._finish(j, "cancelled", flush=False)
        for h in admitted:
            try:
                self._admit(h)
            except Exception as e:  # that request fails, the others go on
                log.exception("a request could not start")
                self._served += 1
                self._emit(h, Failed(f"the engine could not start the request: {e}"))
        return True

    def _admit(self, handle: RequestHandle) -> None:
        """Put a request into the idle slot that holds its conversation: the longest shared prefix, when
        that is at least half the prompt and at least half of the slot's last prompt (a conversation
        continued, regenerated or edited). Otherwise into an empty slot, else the least recently used
        one: a new conversation that shares only a system prompt with a slot must not evict that
        slot's conversation. A prompt cache entry that shares more than that slot is copied into it
        first, and what the slot held is kept in the cache before another prompt displaces it. Only
        the request's owner's conversations count: another client's cached tokens are never reused,
        so its `cached_tokens` and timings say nothing about them."""
        prompt, owner = handle.request.prompt, handle.request.owner
        idle = [s for s in self._slots if s.job is None]
        shared = {s.index: common_prefix(s.tokens, prompt) if s.owner == owner else 0 for s in idle}

        def score(s: _Slot) -> tuple[int, bool, float]:
            n = shared[s.index]
            continued = 2 * n >= len(prompt) and 2 * n >= s.prompt_len
            return (n if continued else 0, *_taken_first(s))

        slot = max(idle, key=score)
        n = shared[slot.index]
        cache = self.prompt_cache
        entry, from_cache = cache.best(owner, prompt) if cache.on else (None, 0)
        # a few more tokens are read faster than two states are copied
        better = entry is not None and from_cache >= n + MIN_TOKENS
        state = cache.state_of(entry) if entry is not None and better else None
        if entry is not None and state is not None:
            n = from_cache if self._swap_in(slot, entry, state) else 0
            entry = entry if n else None
        else:
            entry = None  # none, no better than the slot, or a file on disk that failed its checks
            if not slot.tokens:
                n = self._seed(slot, idle, shared)
        keep = run_start(prompt, min(n, len(prompt) - 1))  # evaluate >= 1 token, an image whole
        if entry is None:
            self._keep_leaving(slot, keep)
        keep = self.runtime.seq_truncate(slot.index, keep)
        del slot.tokens[keep:]
        if entry is not None and keep:  # (a cache that cannot drop a tail keeps nothing: no hit)
            cache.used(entry, keep)
        slot.prompt_len, slot.owner, slot.kept = len(prompt), owner, None
        s = handle.request.sampling
        answer = AnswerDecoder(self.runtime, s, s.stop, handle.request.constraint, handle.request.thinking)
        job = _Job(slot, handle, list(prompt[keep:]), keep, answer)
        source = self._source
        if source is not None and not slot_why_not(self.runtime, handle.request) and not is_image_token(
                max(prompt, default=0)):  # image ids are the largest: no image in the prompt
            job.drafts = SlotDrafts(source.history(prompt), self.draft_max, source.prior, self._judged)
        handle.clock.t_prefill_start = time.perf_counter()
        slot.job = job
        self._active = sorted((*self._active, job), key=lambda j: j.slot.index)

    def _seed(self, slot: _Slot, idle: list[_Slot], shared: dict[int, int]) -> int:
        """Copy into the empty `slot` the prefix that the idle slot sharing the most with the request holds
        (that slot's state, then its tail dropped by the caller), so a new conversation beside another
        does not read their common start (a system prompt) again; the other keeps its slot. Only where the
        prefix is worth a copy of all that slot's cells: a cell is copied far faster than a token is
        prefilled (SEED_CELLS_PER_TOKEN). Returns the tokens seeded (0: none)."""
        src = max(idle, key=lambda s: shared[s.index])
        n = shared[src.index]
        if n < SEED_MIN_TOKENS or n * SEED_CELLS_PER_TOKEN < len(src.tokens):
            return 0
        state = self.runtime.seq_state(src.index)
        if state is None or not self._put_state(slot, state, len(src.tokens)):
            return 0
        slot.tokens[:] = src.tokens
        return n

    def _put_state(self, slot: _Slot, state: bytearray, cells: int) -> bool:
        """Put a sequence's `state` (of `cells` cells) into `slot`'s; False, the slot left empty, when llama.cpp
        refuses it or holds another count of cells."""
        rt = self.runtime
        if rt.set_seq_state(slot.index, state) and rt.seq_cells(slot.index) == cells:
            return True
        rt.seq_truncate(slot.index, 0)
        return False

    def _keep_leaving(self, slot: _Slot, keep: int) -> None:
        """Keep what `slot` holds in the prompt cache when the next request keeps only `keep` of its tokens
        and not its last prompt (another conversation takes the slot: its own next turn finds it there)."""
        if keep + 1 >= slot.prompt_len or not self._worth_keeping(slot) or self._kept(slot):
            return
        self._store(slot)

    def _keep_ahead(self) -> None:
        """While the scheduler is idle, keep in the prompt cache what the slot a new conversation would take
        next holds (`_admit`: an empty one, else the least recently used), so that its admission copies
        nothing: the copy of a conversation's cells was on the new request's first token's path (SmolLM2,
        280 cells on this 2-core host: ~9 ms). Not the slot used last, where a conversation going on (an
        agent's next turn) is found, nor when a request waits: a request that comes during the copy waits
        for it, as it would have at its admission."""
        if not self.keep_ahead or self._queue or not self.prompt_cache.on:
            return
        slot = max(self._slots, key=_taken_first)
        if not slot.tokens or self._kept(slot) or not self._worth_keeping(slot):
            return
        if slot is not max(self._slots, key=lambda s: s.last_used):
            slot.kept = self._store(slot)

    def _store(self, slot: _Slot) -> CacheEntry | None:
        """Copy what `slot` holds into the prompt cache; the entry that holds it (None: nothing kept)."""
        state = self.runtime.seq_state(slot.index)
        if state is None:
            return None
        return self.prompt_cache.store(slot.owner, slot.tokens, slot.prompt_len, state)

    def _kept(self, slot: _Slot) -> bool:
        """What `slot` holds is in the prompt cache's memory as it is (stored ahead by `_keep_ahead`)."""
        return slot.kept is not None and self.prompt_cache.holds(slot.kept)

    def _worth_keeping(self, slot: _Slot) -> bool:
        """Whether what `slot` holds is long enough to keep, and its state (about its cells' bytes) fits."""
        cache = self.prompt_cache
        return cache.worth_keeping(slot.tokens) and len(slot.tokens) * self.model.bytes_per_cell <= cache.limit

    def _swap_in(self, slot: _Slot, entry: Found, state: bytearray) -> bool:
        """Copy a cache entry's state into `slot`, what the slot held kept in the cache (stored once the
        entry is in the slot); False, the slot empty and the entry dropped, when llama.cpp refused it."""
        cache, rt = self.prompt_cache, self.runtime
        leaving = None
        if self._worth_keeping(slot) and not self._kept(slot) and slot.tokens != list(entry.tokens[:len(slot.tokens)]):
            leaving = (slot.owner, tuple(slot.tokens), slot.prompt_len, rt.seq_state(slot.index))
        ok = self._put_state(slot, state, len(entry.tokens))
        if ok:
            slot.tokens[:] = entry.tokens
            slot.owner, slot.prompt_len = entry.owner, entry.prompt_len
        else:
            log.warning("llama.cpp refused a cached prompt's state; it was dropped and the prompt is read again")
            slot.tokens.clear()
            cache.discard(entry)
        if leaving is not None and leaving[3] is not None:
            cache.store(leaving[0], leaving[1], leaving[2], leaving[3])
        return ok

    def _step(self) -> None:
        """One llama_decode: every decoding slot's next token, prefill chunks in the room left, then
        drafts in what is left after that (a full step drafts less, and a prompt waits for no draft)."""
        rt, batch, active = self.runtime, self._batch, self._active
        t_start = time.perf_counter()
        batch.clear()
        decoding = [j for j in active if j.state == "decode"]
        for j in decoding:
            j.index = batch.add_one(j.last, len(j.slot.tokens), j.slot.index)
        chunks: list[tuple[_Job, list[int], bool]] = []
        if len(decoding) < len(active):
            for j in sorted((j for j in active if j.state == "prefill"), key=lambda j: j.handle.id):
                if batch.room == 0:
                    break
                if self.projector is not None and not self._feed_images(j):
                    continue
                chunk = text_before_image(j.pending, j.fed, batch.room)
                done = j.fed + len(chunk) == len(j.pending)
                j.index = batch.add(chunk, len(j.slot.tokens), j.slot.index, done)
                chunks.append((j, chunk, done))
        priced = True  # a step the rates may learn from
        if self._source is not None and decoding and self.tie_margin.drift is None:
            self._measure_drift(decoding)  # before the first draft; not a step's price
            priced = False
        began = time.perf_counter()  # a draft model's own decodes count in the step's price
        if self._source is not None and decoding and self.tie_margin.drift is not None:
            self._add_drafts(decoding, self._source)
        if batch.n == 0:
            return
        t_drafted = time.perf_counter()
        self._events_out(idle=False)
        t_events = time.perf_counter()
        rows = len(decoding)
        n_rows = rows + len(chunks)
        rt.threads_for(n_rows == 1 or any(j.draft for j in decoding))
        rc = rt.decode_batch(batch)
        if rc != 0:
            for j in decoding + [c[0] for c in chunks]:
                self._fail(j, f"llama.cpp could not decode the batch (code {rc})")
            return
        now = time.perf_counter()
        self._steps += 1
        if n_rows > self._peak_seqs:
            self._peak_seqs = n_rows
        ready = decoding
        for j in decoding:
            j.slot.tokens.append(j.last)
        for j, chunk, done in chunks:
            j.slot.tokens.extend(chunk)
            j.fed += len(chunk)
            if done:
                self._prefilled(j, now)
                ready.append(j)
        sample_at = rt.sample_at
        emitted = self._emitted
        judged: list[tuple[DraftGate, int, int]] = []  # each drafting slot's gate, tokens drafted, tokens got
        for j in ready:
            if j.draft:
                drafted, before = len(j.draft), j.n_gen
                self._take_draft(j, now)
                if j.drafts is not None:
                    judged.append((j.drafts.gate, drafted, j.n_gen - before))
                continue
            tok = j.answer.forced() if j.answer.budget is not None else None  # a thinking's close
            if tok is None:
                tok = sample_at(j.sampler, j.index)
                grammar = j.answer.grammar
                if grammar is not None and grammar.over_budget:  # that request ends, never the slots' loop
                    self._fail(j, grammar.why_stopped())
                    continue
            self._accept(j, tok, now)
        got = self._emitted - emitted
        self._rate.add(now, got)
        if not chunks and priced:  # a prompt's chunk is a larger kernel's work: not a step's price
            # The whole step, checking the drafts and handing out the tokens too: what the slots wait for.
            end = time.perf_counter()
            if self._source is not None:
                self.decode_costs.add(batch.n, end - began)
            parts = {"build": began - t_start, "draft": t_drafted - began, "events": t_events - t_drafted,
                     "decode": now - t_events, "take": end - now}
            if judged:
                self.rates.drafted(rows, got, end - t_start, self._steps, judged, parts)
            else:
                self.rates.plain(rows, got, end - t_start, self._steps, parts)

    def _add_drafts(self, decoding: list[_Job], source: SlotDraftSource) -> None:
        """Ask `source` once for every greedy slot's draft, each as long as its share of the room
        (`share`: what the drafted tokens bring against what they add to the decode); only slots whose
        drafts pay as the steps realise them (`StepRates`), and none when a plain step is due."""
        batch = self._batch
        drafting = [(j, j.drafts) for j in decoding if j.drafts is not None]
        rates, rows, probing = self.rates, len(decoding), False
        if drafting and rules.WEIGH_COSTS:
            step = self._steps
            if rates.probe_due(rows, step):
                return  # a step without drafts now and then, so that the plain step keeps its own rate
            probing = rates.hopeless(rows)  # not even a draft always taken pays at this many rows
            if probing and not rates.cost_probe_due(rows, step):
                return
            # a slot whose drafted steps did not realise more than plain ones waits before it tries again
            drafting = [(j, d) for j, d in drafting if rates.may_draft(d.gate, step, rows)]
        if not drafting:
            return
        # each slot's room: its context and max_tokens (the first drafted token sits after `last`)
        limits = [min(self.n_ctx_seq - len(j.slot.tokens) - 1, j.max_tokens - j.n_gen) for j, _ in drafting]
        asks = [d.ask(limit) for (_, d), limit in zip(drafting, limits, strict=True)]
        if rules.WEIGH_COSTS:  # no longer than the last drafted token that pays for what it adds, as measured
            caps = [PROBE_DRAFT if probing else rates.longest(rows, a[0]) if a is not None else None for a in asks]
            limits = [limit if cap is None else min(limit, cap) for limit, cap in zip(limits, caps, strict=True)]
            asks = [a if a is None or cap is None else (a[0], min(a[1], cap)) if cap > 0 else None
                    for a, cap in zip(asks, caps, strict=True)]
        lengths = None
        if rules.WEIGH_COSTS and any(asks):
            lengths = share(self.decode_costs, batch.n, [a for a in asks if a is not None], batch.room)
        shares, room, wants = iter(lengths or ()), batch.room, []
        for (j, d), limit, a in zip(drafting, limits, asks, strict=True):
            want = d.want(min(room, limit), next(shares) if lengths is not None and a is not None else None)
            if want > 0:
                wants.append((j, d, want))
                room -= want
        if not wants:
            return
        guesses = source.draft_all([(j.slot.index, d.history, want) for j, d, want in wants])
        for (j, _, _), draft in zip(wants, guesses, strict=True):
            if draft:
                j.draft, j.draft_at = draft, batch.n
                batch.add_all(draft, len(j.slot.tokens) + 1, j.slot.index)

    def _measure_drift(self, decoding: list[_Job]) -> None:
        """Measure how far this model's batched logits drift from one-token ones, in the sequence of a
        greedy slot with text enough (once per model; the others wait that long): no draft before."""
        for j in decoding:
            if j.drafts is None:
                continue
            slot = j.slot
            if self.tie_margin.measure(SeqRows(self.runtime, slot.index, len(slot.tokens)), slot.tokens,
                                       self.decode_costs):
                log.info("batched decodes drift from one-token ones by up to %.3g", self.tie_margin.drift)
                return

    def _take_draft(self, j: _Job, now: float) -> None:
        """Keep what the model agreed with of `j`'s draft (decoded after `j.last`), drop the rest
        from its sequence, and hand each kept token, then the model's next one, to `_accept`."""
        draft, j.draft = j.draft, []
        drafts, slot = j.drafts, j.slot
        assert drafts is not None
        verdict = verify(self.runtime, j.index, j.draft_at, draft, self.tie_margin.margin)
        kept = verdict.accepted
        drafts.checked(len(draft), len(kept))
        self._drafted += len(draft)
        self._draft_accepted += len(kept)
        # The cache holds slot.tokens (ending with `last`) then the draft. The kept tokens stay,
        # except after a near tie, where the row's input (the last kept token, or `last`) goes too
        # and is decoded again alone in the next step.
        in_cache = kept if verdict.next_token is not None else kept[:-1]
        if verdict.next_token is None:
            drafts.plain_next = True
            if not kept:
                slot.tokens.pop()
        keep = len(slot.tokens) + len(in_cache)
        if self.runtime.seq_truncate(slot.index, keep) != keep:
            raise EngineError("llama.cpp could not drop a rejected draft from a slot's cache")
        for i, tok in enumerate(kept):
            if not self._accept(j, tok, now):
                return
            if j.handle.cancelled:  # between tokens, as the plain loop sees it between steps
                self._finish(j, "cancelled", flush=False)
                return
            if i < len(in_cache):
                slot.tokens.append(tok)
        if verdict.next_token is not None:
            self._accept(j, verdict.next_token, now)

    def _feed_images(self, j: _Job) -> bool:
        """Encode the images at the front of `j`'s pending prompt and decode them into its sequence, outside
        the shared batch (mtmd decodes an image's embeddings in batches of its own; the other slots wait
        for the encoder); False when one failed, and `j` with it."""
        assert self.projector is not None
        pending, slot = j.pending, j.slot
        while j.fed < len(pending) and is_image_token(pending[j.fed]):
            end = run_end(pending, j.fed)
            try:
                self.projector.evaluate(pending[j.fed], len(slot.tokens), slot.index)
            except EngineError as e:
                self._fail(j, str(e))
                return False
            slot.tokens.extend(pending[j.fed : end])
            j.fed = end
        return True

    def _prefilled(self, j: _Job, now: float) -> None:
        clock = j.handle.clock
        clock.t_prefill_end = now
        evaluated = len(j.pending)
        prefill_ms = (now - clock.t_prefill_start) * 1000
        clock.base = MetricsSnapshot(
            prompt_tokens=j.cached + evaluated, cached_tokens=j.cached, evaluated_tokens=evaluated,
            prefill_ms=prefill_ms, prefill_tps=evaluated / prefill_ms * 1000 if prefill_ms > 0 else 0.0,
        )
        j.state = "decode"
        j.pending = []
        self._emit(j.handle, PrefillDone(j.cached + evaluated, j.cached, evaluated, prefill_ms))

    def _accept(self, j: _Job, tok: int, now: float) -> bool:
        """A token picked for `j`: emit its text, then finish (False) or feed it next step (True)."""
        rt = self.runtime
        if j.stop_on_eog and tok in rt.eog:
            self._finish(j, "stop")
            return False
        j.times.append(now)
        j.n_gen += 1
        self._emitted += 1
        out, hit = j.answer.feed(rt.piece(tok))
        if out:
            j.pieces.append(out)
            self._emit(j.handle, Token(out, j.n_gen))
        if hit:
            self._finish(j, "stop", flush=False)
        elif j.n_gen >= j.max_tokens:
            self._finish(j, "length")
        elif len(j.slot.tokens) >= self.n_ctx_seq:
            self._finish(j, "context_full")
        else:
            j.last = tok
            if j.drafts is not None:
                j.drafts.taken(tok)
            return True
        return False

    def _finish(self, j: _Job, reason: FinishReason, flush: bool = True) -> None:
        tail = j.answer.flush() if flush else ""
        if tail:
            j.pieces.append(tail)
            self._emit(j.handle, Token(tail, j.n_gen))
        slot = j.slot
        if j.drafts is not None and self.runtime.seq_cells(slot.index) > len(slot.tokens):
            # drafted tokens past where the answer ended; the plain loop never decoded them
            self.runtime.seq_truncate(slot.index, len(slot.tokens))
        metrics = j.handle.clock.snapshot(
            self.runtime.seq_cells(slot.index), self.n_ctx_seq, self.model.bytes_per_cell, reason)
        if j.drafts is not None:
            metrics = replace(metrics, draft_n=j.drafts.drafted, draft_n_accepted=j.drafts.accepted)
        self._cancelled += reason == "cancelled"
        self._release(j)
        self._emit(j.handle, Finished(reason, "".join(j.pieces), metrics, stop=j.answer.stopped_by))

    def _fail(self, j: _Job, message: str) -> None:
        """Give up on a request; its sequence is cleared, since a failed decode may leave
        part of a batch in the cache."""
        self._release(j)
        self.runtime.seq_truncate(j.slot.index, 0)
        j.slot.tokens.clear()
        self._emit(j.handle, Failed(message))

    def _release(self, j: _Job) -> None:
        j.answer.close()
        j.slot.job = None
        self._active = [a for a in self._active if a is not j]
        j.slot.last_used = time.perf_counter()
        self._served += 1
        self._publish(j.slot.last_used, force=True)  # a request's end is seen before its Finished event

    def _emit(self, handle: RequestHandle, event: BatchEvent) -> None:
        try:
            handle.request.sink(event)
        except Exception:  # a broken consumer loses its request, not the scheduler
            log.exception("a request's sink failed; cancelling it")
            handle.cancel()

    # --- snapshots -------------------------------------------------------------------------
    def _publish(self, now: float, force: bool = False) -> None:
        if not force and now < self._next_publish:
            return
        self._next_publish = now + PUBLISH_EVERY_S
        self._snapshot = snap = self._build_snapshot(now)
        if self._on_snapshot is not None:
            try:
                self._on_snapshot(snap)
            except Exception:
                log.exception("on_snapshot failed")

    def _build_snapshot(self, now: float) -> BatchSnapshot:
        rt = self.runtime
        slots = []
        for s in self._slots:
            j = s.job
            cells = rt.seq_cells(s.index)
            if j is None:
                slots.append(SlotSnapshot(s.index, "idle", kv_cells=cells))
                continue
            slots.append(SlotSnapshot(
                s.index, j.state, j.handle.request.label or f"#{j.handle.id}",
                prompt_tokens=len(j.handle.request.prompt), generated=j.n_gen, kv_cells=cells,
                tps=recent_rate(j.times, now),
                drafted=j.drafts.drafted if j.drafts else 0, accepted=j.drafts.accepted if j.drafts else 0,
                cached=j.cached,
            ))
        return BatchSnapshot(
            slots=tuple(slots), queued=len(self._queue), aggregate_tps=self._rate.rate(now),
            n_ctx_seq=self.n_ctx_seq, served=self._served, cancelled=self._cancelled, steps=self._steps,
            peak_batch_seqs=self._peak_seqs, peak_queued=self._peak_queued,
            speculative=self.speculative if self._speculate else "off", draft_n=self._drafted,
            draft_n_accepted=self._draft_accepted, prompt_cache=self.prompt_cache.snapshot(),
        )
