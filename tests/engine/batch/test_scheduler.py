"""The batched scheduler on real llama.cpp (the tiny model): slots, queue, cancel, prefix reuse."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from prefill.engine.batch.request import BatchEvent, BatchRequest, Failed
from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.batch.scheduler import BatchScheduler, common_prefix
from prefill.engine.batch.snapshot import BatchSnapshot
from prefill.engine.errors import ContextOverflow, QueueFull
from prefill.engine.events import Finished, PrefillDone, Token
from prefill.engine.settings import LoadSettings, ServeSampling

WAIT_S = 60
GREEDY = ServeSampling(temperature=0.0, repeat_penalty=1.0, max_tokens=24, ignore_eos=True)


class Collector:
    """A request's sink: keeps the events, signals the first token and the end."""

    def __init__(self) -> None:
        self.events: list[BatchEvent] = []
        self.first_token = threading.Event()
        self.done = threading.Event()

    def __call__(self, ev: BatchEvent) -> None:
        self.events.append(ev)
        if isinstance(ev, Token):
            self.first_token.set()
        if isinstance(ev, Finished | Failed):
            self.done.set()

    def wait(self) -> Finished:
        assert self.done.wait(WAIT_S), "the request never finished"
        end = self.events[-1]
        assert isinstance(end, Finished), end
        return end

    def prefill_wait(self) -> PrefillDone:
        self.wait()
        return self.prefill

    @property
    def prefill(self) -> PrefillDone:
        return next(e for e in self.events if isinstance(e, PrefillDone))


def make_scheduler(model: Path, n_seq: int, n_ctx: int = 512, **kw: object) -> BatchScheduler:
    loaded = load_batch_model(model, LoadSettings(n_ctx=n_ctx, n_gpu_layers="none", n_threads=1), n_seq)
    return BatchScheduler(loaded, **kw)  # type: ignore[arg-type]


@pytest.fixture
def sched(tiny_model: Path) -> Iterator[BatchScheduler]:
    s = make_scheduler(tiny_model, 3)
    yield s
    s.close()


def prompt_of(sched: BatchScheduler, text: str) -> tuple[int, ...]:
    return tuple(sched.runtime.tokenize(text, add_special=True))


def run(sched: BatchScheduler, prompt: tuple[int, ...], sampling: ServeSampling = GREEDY) -> Collector:
    c = Collector()
    sched.submit(BatchRequest(prompt, sampling, c))
    return c


def test_batched_answers_match_one_at_a_time(sched: BatchScheduler) -> None:
    prompts = [prompt_of(sched, t) for t in ("alpha beta gamma", "one two three four five", "hello")]
    alone = [run(sched, p).wait().text for p in prompts]
    together = [run(sched, p) for p in prompts]
    finished = [c.wait() for c in together]
    assert [f.text for f in finished] == alone
    assert all(f.metrics.completion_tokens == 24 for f in finished)
    assert sched.snapshot().peak_batch_seqs == 3  # all three decoded in one batch


def test_events_come_in_order_with_figures(sched: BatchScheduler) -> None:
    c = run(sched, prompt_of(sched, "abc def ghi"))
    end = c.wait()
    assert isinstance(c.events[0], PrefillDone)
    tokens = [e for e in c.events if isinstance(e, Token)]
    assert "".join(t.text for t in tokens) == end.text
    m = end.metrics
    assert m.prompt_tokens == len(prompt_of(sched, "abc def ghi")) and m.completion_tokens == 24
    assert m.ttft_ms > 0 and m.decode_tps > 0 and m.kv_used > m.prompt_tokens
    assert end.reason == "length"


def test_requests_beyond_the_slots_wait_in_a_queue(tiny_model: Path) -> None:
    sched = make_scheduler(tiny_model, 2)
    try:
        prompts = [prompt_of(sched, f"request number {i}") for i in range(5)]
        alone = [run(sched, p).wait().text for p in prompts]
        cs = [run(sched, p) for p in prompts]
        ends = [c.wait() for c in cs]
        snap = sched.snapshot()
        # each admitted as a slot freed: its prefill beside the other slot's decoding
        assert [e.text for e in ends] == alone
        assert all(e.metrics.completion_tokens == 24 for e in ends)
        assert snap.peak_queued >= 1 and snap.peak_batch_seqs == 2
        assert snap.served == 10 and snap.queued == 0
    finally:
        sched.close()


def test_cancel_frees_the_slot_and_drops_a_queued_request(tiny_model: Path) -> None:
    sched = make_scheduler(tiny_model, 1)
    try:
        long = replace(GREEDY, max_tokens=100_000)
        a = Collector()
        ha = sched.submit(BatchRequest(prompt_of(sched, "first"), long, a))
        b = Collector()
        hb = sched.submit(BatchRequest(prompt_of(sched, "second"), long, b))
        assert a.first_token.wait(WAIT_S)
        hb.cancel()  # waiting behind `a`: leaves the queue without ever running
        end_b = b.wait()
        assert end_b.reason == "cancelled" and end_b.metrics.completion_tokens == 0
        assert not any(isinstance(e, PrefillDone) for e in b.events)
        assert not a.done.is_set()
        ha.cancel()
        end_a = a.wait()
        assert end_a.reason == "cancelled" and 0 < end_a.metrics.completion_tokens < 400
        c = run(sched, prompt_of(sched, "third"))  # the slot is free again
        assert c.wait().reason == "length"
    finally:
        sched.close()


def test_a_new_request_reuses_its_slots_prefix(sched: BatchScheduler) -> None:
    base = prompt_of(sched, "the quick brown fox jumps over the lazy dog " * 4)
    other = prompt_of(sched, "completely different words here")
    run(sched, base).wait()
    run(sched, other).wait()
    longer = base + tuple(sched.runtime.tokenize(" and then some more", add_special=False))
    c = run(sched, longer)
    c.wait()
    assert c.prefill.cached_tokens >= len(base)
    assert c.prefill.evaluated_tokens == len(longer) - c.prefill.cached_tokens
    again = run(sched, other)  # went to its own slot, still cached there
    again.wait()
    assert again.prefill.cached_tokens == len(other) - 1


def test_a_stranger_sharing_only_the_start_does_not_take_a_conversations_slot(tiny_model: Path) -> None:
    """A new request whose prompt shares only a system prompt with a slot's long conversation goes to
    another slot, so the conversation's next turn still finds its cache."""
    s = make_scheduler(tiny_model, 2)
    try:
        system = prompt_of(s, "You are a helpful assistant.")
        more = functools.partial(s.runtime.tokenize, add_special=False)
        chat = system + tuple(more(" the quick brown fox jumps over the lazy dog" * 6))
        run(s, chat).wait()
        stranger = system + tuple(more(" hi"))
        assert 2 * common_prefix(chat, stranger) >= len(stranger)  # over half of its prompt: it used to win
        run(s, stranger).wait()
        follow = chat + tuple(more(" and on"))
        c = run(s, follow)
        c.wait()
        assert c.prefill.cached_tokens >= len(chat)
        assert run(s, stranger).prefill_wait().cached_tokens == len(stranger) - 1  # and it kept its own
    finally:
        s.close()


def test_prompt_over_a_slots_context_is_refused(sched: BatchScheduler) -> None:
    too_long = tuple([5] * sched.n_ctx_seq)
    with pytest.raises(ContextOverflow):
        sched.submit(BatchRequest(too_long, GREEDY, Collector()))
    assert run(sched, prompt_of(sched, "still serving")).wait().reason == "length"


def test_a_full_slot_context_ends_the_answer(sched: BatchScheduler) -> None:
    p = prompt_of(sched, "fill the context")
    end = run(sched, p, replace(GREEDY, max_tokens=100_000)).wait()
    assert end.reason == "context_full"
    # every cell holds a token, and the last cell's logits gave one more
    assert end.metrics.kv_used == sched.n_ctx_seq
    assert end.metrics.completion_tokens == sched.n_ctx_seq - len(p) + 1


def test_stop_strings_and_seeds_are_honoured(sched: BatchScheduler) -> None:
    p = prompt_of(sched, "seeded sampling")
    text = run(sched, p).wait().text
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    end = run(sched, p, replace(GREEDY, stop=(stop,))).wait()
    assert end.reason == "stop" and end.text == text[: text.index(stop)]
    hot = replace(GREEDY, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=7)
    first, second = run(sched, p, hot).wait().text, run(sched, p, hot).wait().text
    assert first == second
    assert run(sched, p, replace(hot, seed=8)).wait().text != first


def test_on_events_ends_every_step_on_the_scheduler_thread(sched: BatchScheduler) -> None:
    """The hook a server hands its streams over in: after each step's events, before the next decode,
    and once more when the scheduler falls idle, after the last event."""
    log: list[str] = []
    threads: set[str] = set()
    idle = threading.Event()

    def on_events(is_idle: bool) -> None:
        threads.add(threading.current_thread().name)
        log.append("idle" if is_idle else "step")
        if is_idle and any(e.startswith("Finished") for e in log):
            idle.set()

    def sink(ev: BatchEvent) -> None:
        log.append(type(ev).__name__)

    sched.on_events = on_events
    sched.submit(BatchRequest(prompt_of(sched, "a hook"), replace(GREEDY, max_tokens=5), sink))
    assert idle.wait(WAIT_S)
    assert threads == {"prefill-batch"}
    work = log[log.index("PrefillDone") - 1:]  # from the decode that finished the prompt
    # every token's event comes between two step ends; the end is followed by the idle call
    assert work == ["step", "PrefillDone", "Token"] + ["step", "Token"] * 4 + ["Finished", "idle"]


def test_snapshots_show_slots_at_work(tiny_model: Path) -> None:
    seen: list[BatchSnapshot] = []
    busy, idle_again = threading.Event(), threading.Event()

    def on_snapshot(s: BatchSnapshot) -> None:
        seen.append(s)
        if busy.is_set() and s.busy == 0:
            idle_again.set()
        if sum(1 for x in s.slots if x.state == "decode" and x.tps > 0) == 2 and s.aggregate_tps > 0:
            busy.set()

    sched = make_scheduler(tiny_model, 2, on_snapshot=on_snapshot)
    try:
        long = replace(GREEDY, max_tokens=100_000)
        handles = [sched.submit(BatchRequest(prompt_of(sched, t), long, Collector())) for t in ("x y", "z w")]
        assert busy.wait(WAIT_S)
        snap = next(s for s in reversed(seen) if s.busy == 2)
        assert all(s.kv_cells > 0 and s.generated > 0 for s in snap.slots)
        for h in handles:
            h.cancel()
        assert idle_again.wait(WAIT_S)  # cancelled slots go idle, and the window hears of it
        assert sched.snapshot().served == 2
    finally:
        sched.close()


def test_a_long_prompt_prefills_in_chunks_beside_decoding_slots(tiny_model: Path) -> None:
    alone_sched = make_scheduler(tiny_model, 2, n_ctx=1024)
    try:
        long = prompt_of(alone_sched, "many words in a long prompt " * 60)
        assert len(long) > alone_sched.runtime.n_batch  # more than one batch: prefilled over several steps
        short = prompt_of(alone_sched, "a short one")
        alone = [run(alone_sched, p).wait().text for p in (long, short)]
    finally:
        alone_sched.close()
    sched = make_scheduler(tiny_model, 2, n_ctx=1024)
    try:
        busy = Collector()
        sched.submit(BatchRequest(short, replace(GREEDY, max_tokens=400), busy))
        assert busy.first_token.wait(WAIT_S)
        c = run(sched, long)  # its chunks share batches with the other slot's decode tokens
        assert c.wait().text == alone[0]
        assert c.prefill.evaluated_tokens == len(long)
        assert busy.wait().text.startswith(alone[1])
        assert sched.snapshot().peak_batch_seqs == 2
    finally:
        sched.close()


def test_the_queue_behind_the_slots_is_bounded(tiny_model: Path) -> None:
    sched = make_scheduler(tiny_model, 1, max_queued=1)
    try:
        long = ServeSampling(temperature=0.0, repeat_penalty=1.0, max_tokens=100_000, ignore_eos=True)
        first = Collector()
        handle = sched.submit(BatchRequest(prompt_of(sched, "a long one"), long, first))
        assert first.first_token.wait(WAIT_S)
        waiting = run(sched, prompt_of(sched, "second"))  # one may wait
        with pytest.raises(QueueFull):
            run(sched, prompt_of(sched, "third"))  # a third is refused at once, nothing queued
        assert sched.snapshot().queued <= 1
        handle.cancel()
        assert waiting.wait().reason == "length"
        assert run(sched, prompt_of(sched, "room again")).wait().text  # the bound frees as the queue drains
    finally:
        sched.close()
