"""Speculative decoding in the server's slots (SmolLM2, flash attention): each slot's answer is token
for token the one plain batched decoding writes, alone or beside other slots, and a rejected draft
never reaches a request's events."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from prefill.engine.batch import scheduler
from prefill.engine.batch.request import BatchEvent, BatchRequest, Failed, RequestHandle
from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.batch.slot_drafts import NgramSlots, SlotDrafts, check_mode
from prefill.engine.drafts import rules
from prefill.engine.drafts.batch_drift import SAFETY
from prefill.engine.drafts.draft_length import PROBE_EVERY
from prefill.engine.events import Finished, Token
from prefill.engine.message import Message
from prefill.engine.prompt.model_chat import ModelChat
from prefill.engine.request import ChatRequest
from prefill.engine.settings import FlashAttn, LoadSettings, ServeSampling
from prefill.engine.speculation import DRAFT_MAX, Speculation

WAIT_S = 300
PASSAGES = (
    "The river town woke slowly that spring. Fishermen mended their nets along the stone quay while the "
    "baker set out loaves still warm from the oven. Children ran between the market stalls, chasing a dog "
    "that had stolen a string of sausages, and the old ferryman watched them with a patient smile.",
    "def area(width, height):\n    return width * height\n\n\ndef perimeter(width, height):\n"
    "    return 2 * (width + height)\n\n\nprint(area(3, 4), perimeter(3, 4))\n",
    "Dear Ms. Patel, thank you for your letter of the fourth of March. The parcel you sent arrived safely "
    "on Tuesday, and the books inside were in excellent condition. We will send payment by the end of "
    "the month, as agreed, and look forward to working with you again next year.",
)
GREEDY = ServeSampling(temperature=0.0, repeat_penalty=1.0, max_tokens=120)
_owners = itertools.count()


@dataclass
class Answer:
    events: list[BatchEvent]

    @property
    def finished(self) -> Finished:
        end = self.events[-1]
        assert isinstance(end, Finished), end
        return end

    @property
    def streamed(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, Token))


class Collector:
    def __init__(self, cancel_at: int = 0) -> None:
        self.events: list[BatchEvent] = []
        self.done = threading.Event()
        self.cancel_at = cancel_at
        self.handle: RequestHandle | None = None

    def __call__(self, ev: BatchEvent) -> None:
        self.events.append(ev)
        if self.cancel_at and isinstance(ev, Token) and ev.n_tokens == self.cancel_at:
            assert self.handle is not None
            self.handle.cancel()
        if isinstance(ev, Finished | Failed):
            self.done.set()

    def answer(self) -> Answer:
        assert self.done.wait(WAIT_S), "the request never finished"
        return Answer(self.events)


def load(model: Path, speculative: str, n_batch: int = 512, flash_attn: FlashAttn = "on") -> BatchScheduler:
    settings = LoadSettings(n_ctx=1024, n_batch=n_batch, n_gpu_layers="none", n_threads=1, flash_attn=flash_attn)
    return BatchScheduler(load_batch_model(model, settings, 3), speculative=speculative)


@pytest.fixture(scope="module")
def plain(smollm2: Path) -> Iterator[BatchScheduler]:
    s = load(smollm2, "off")
    yield s
    s.close()


@pytest.fixture(scope="module")
def fast(smollm2: Path) -> Iterator[BatchScheduler]:
    s = load(smollm2, "ngram")
    yield s
    s.close()


def copy_prompt(sched: BatchScheduler, passage: str) -> tuple[int, ...]:
    chat = ModelChat(sched.model.header.chat_template, sched.runtime)
    request = ChatRequest.of([Message("user", "Repeat this text exactly:\n\n" + passage)], GREEDY)
    return tuple(chat.prompt(request)[1])


def submit(sched: BatchScheduler, prompt: tuple[int, ...], sampling: ServeSampling = GREEDY,
           cancel_at: int = 0) -> Collector:
    c = Collector(cancel_at)
    # a fresh owner each time: no request reuses another's cached prefix, so runs compare alike
    c.handle = sched.submit(BatchRequest(prompt, sampling, c, owner=f"t{next(_owners)}"))
    return c


def together(sched: BatchScheduler, prompts: list[tuple[int, ...]], sampling: ServeSampling = GREEDY) -> list[Answer]:
    collectors = [submit(sched, p, sampling) for p in prompts]
    return [c.answer() for c in collectors]


def check_same(plain: Answer, fast: Answer) -> None:
    a, b = plain.finished, fast.finished
    assert b.text == a.text
    assert b.reason == a.reason
    assert b.metrics.completion_tokens == a.metrics.completion_tokens
    # what the slot's cache holds at the end is what plain decoding leaves: no draft cell left over
    assert b.metrics.kv_used == a.metrics.kv_used
    assert fast.streamed == b.text  # every token event was a kept token, in order
    assert a.metrics.draft_n == 0


def test_one_greedy_request_is_unchanged_and_takes_drafts(plain: BatchScheduler, fast: BatchScheduler) -> None:
    prompt = copy_prompt(plain, PASSAGES[0])
    a, b = together(plain, [prompt])[0], together(fast, [prompt])[0]
    check_same(a, b)
    m = b.finished.metrics
    assert m.draft_n > 0 and 0 < m.draft_n_accepted <= m.draft_n
    # a copy task keeps most of its drafts
    assert m.draft_n_accepted >= m.completion_tokens // 3
    # measured before the first draft was checked: the bundled Q4_1's batches are one-token decodes bit for bit
    assert fast.tie_margin.drift == 0.0
    assert fast.decode_costs.line() is not None  # and every step's price was taken


def test_drafts_are_as_long_as_their_share_says(plain: BatchScheduler, smollm2: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """With the costs weighed (the suite checks drafts whatever the timing), a slot drafts what
    `share` gives it: nothing but a probe now and then where no draft pays, and the text is the same."""
    monkeypatch.setattr(rules, "WEIGH_COSTS", True)
    monkeypatch.setattr(scheduler, "share", lambda costs, base, asks, room: [0] * len(asks))
    prompt = copy_prompt(plain, PASSAGES[0])
    expected = together(plain, [prompt])[0]
    s = load(smollm2, "ngram")
    try:
        got = together(s, [prompt])[0]
        assert s.decode_costs.plain(1) > 0  # one-token steps, priced
    finally:
        s.close()
    check_same(expected, got)
    m = got.finished.metrics
    # a probe every PROBE_EVERY steps, as long as acceptance alone says (drafting every step, the copy
    # keeps at least a third of its tokens from drafts: test_one_greedy_request_is_unchanged_and_takes_drafts)
    assert m.draft_n <= (m.completion_tokens // PROBE_EVERY + 1) * DRAFT_MAX
    assert m.draft_n < m.completion_tokens // 3


def test_three_slots_at_once_are_each_unchanged(plain: BatchScheduler, fast: BatchScheduler) -> None:
    prompts = [copy_prompt(plain, p) for p in PASSAGES]
    for a, b in zip(together(plain, prompts), together(fast, prompts), strict=True):
        check_same(a, b)
        assert b.finished.metrics.draft_n_accepted > 0
    snap = fast.snapshot()
    assert snap.speculative == "ngram" and snap.draft_n_accepted > 0 and snap.peak_batch_seqs == 3


def test_a_stop_string_inside_a_draft_ends_the_answer_there(plain: BatchScheduler, fast: BatchScheduler) -> None:
    prompt = copy_prompt(plain, PASSAGES[0])
    stop = replace(GREEDY, stop=("sausages",))
    a, b = submit(plain, prompt, stop).answer(), submit(fast, prompt, stop).answer()
    check_same(a, b)
    assert b.finished.reason == "stop" and "sausages" not in b.streamed and "stolen a string of" in b.streamed


@pytest.mark.parametrize("max_tokens", [1, 2, 37])
def test_max_tokens_is_kept_exactly(plain: BatchScheduler, fast: BatchScheduler, max_tokens: int) -> None:
    prompt = copy_prompt(plain, PASSAGES[2])
    short = replace(GREEDY, max_tokens=max_tokens)
    a, b = submit(plain, prompt, short).answer(), submit(fast, prompt, short).answer()
    check_same(a, b)
    assert b.finished.reason == "length" and b.finished.metrics.completion_tokens == max_tokens


def test_end_of_generation_inside_a_draft_stops_as_plain_decoding_does(plain: BatchScheduler,
                                                                       fast: BatchScheduler) -> None:
    prompt = copy_prompt(plain, PASSAGES[1])
    whole = replace(GREEDY, max_tokens=400)
    a, b = submit(plain, prompt, whole).answer(), submit(fast, prompt, whole).answer()
    check_same(a, b)
    assert b.finished.reason == "stop"


def test_cancel_between_kept_tokens_stops_at_that_token(plain: BatchScheduler, fast: BatchScheduler) -> None:
    prompt = copy_prompt(plain, PASSAGES[0])
    a = submit(plain, prompt).answer()
    b = submit(fast, prompt, cancel_at=20).answer()
    assert b.finished.reason == "cancelled"
    tokens = [e for e in b.events if isinstance(e, Token)]
    assert tokens[-1].n_tokens == 20  # nothing after the token the client cancelled on
    assert a.finished.text.startswith(b.streamed)
    assert b.finished.metrics.kv_used == len(prompt) + 19  # the cancelled-on token was never decoded


def test_a_sampled_request_beside_a_greedy_one(plain: BatchScheduler, fast: BatchScheduler) -> None:
    prompt = copy_prompt(plain, PASSAGES[0])
    sampled = replace(GREEDY, temperature=0.8, seed=7, max_tokens=60, ignore_eos=True)
    a = submit(plain, prompt).answer()
    greedy_c, sampled_c = submit(fast, prompt), submit(fast, copy_prompt(fast, PASSAGES[2]), sampled)
    b, s = greedy_c.answer(), sampled_c.answer()
    check_same(a, b)
    assert b.finished.metrics.draft_n > 0
    assert s.finished.metrics.draft_n == 0  # sampling decodes one token a step
    assert s.finished.metrics.completion_tokens == 60 and s.streamed == s.finished.text


@pytest.mark.parametrize("near_tie", [4.0, 1e9])
def test_near_ties_are_decoded_again_the_plain_way(plain: BatchScheduler, fast: BatchScheduler,
                                                   monkeypatch: pytest.MonkeyPatch, near_tie: float) -> None:
    """A wider margin makes many rows (4.0) or every row (1e9) a near tie: the input is dropped and
    decoded again alone, at the draft's first row or past kept tokens, and the text is unchanged."""
    monkeypatch.setattr(fast.tie_margin, "drift", near_tie / SAFETY)
    prompts = [copy_prompt(plain, p) for p in (PASSAGES[0], PASSAGES[2])]
    for a, b in zip(together(plain, prompts), together(fast, prompts), strict=True):
        check_same(a, b)
        assert b.finished.metrics.draft_n > 0
        if near_tie > 100:
            assert b.finished.metrics.draft_n_accepted == 0


def test_penalties_and_ignore_eos_decode_one_token_a_step(fast: BatchScheduler) -> None:
    prompt = copy_prompt(fast, PASSAGES[0])
    for sampling in (replace(GREEDY, repeat_penalty=1.1, max_tokens=30),
                     replace(GREEDY, ignore_eos=True, max_tokens=30)):
        assert submit(fast, prompt, sampling).answer().finished.metrics.draft_n == 0


def test_drafts_shrink_to_fit_a_small_batch(smollm2: Path, plain: BatchScheduler) -> None:
    prompts = [copy_prompt(plain, p) for p in PASSAGES]
    expected = together(plain, prompts)
    small = load(smollm2, "ngram", n_batch=6)  # 3 slots' tokens leave room for 3 draft tokens a step
    try:
        got = together(small, prompts)
    finally:
        small.close()
    for a, b in zip(expected, got, strict=True):
        check_same(a, b)
    assert sum(b.finished.metrics.draft_n_accepted for b in got) > 0


def test_without_flash_attention_the_server_says_why_it_does_not_speculate(tiny_model: Path) -> None:
    s = load(tiny_model, "ngram", flash_attn="off")
    try:
        assert "flash attention" in s.speculation_note
        answer = submit(s, tuple(s.runtime.tokenize("hello there", add_special=True)),
                        replace(GREEDY, max_tokens=8)).answer()
        assert answer.finished.metrics.draft_n == 0 and s.snapshot().speculative == "off"
    finally:
        s.close()


def test_slot_modes_and_draft_model_values() -> None:
    assert check_mode("ngram") == "ngram" and check_mode("draft") == "draft"
    with pytest.raises(ValueError, match="ngram"):
        check_mode("draft.gguf")
    off, ngram = Speculation.from_flag("off"), Speculation.from_flag("ngram", 4)
    assert (off.mode, off.draft_wanted, ngram.mode, ngram.draft_max) == ("off", "", "ngram", 4)
    draft = Speculation.from_flag("models/small.GGUF")
    assert (draft.mode, draft.draft_wanted, draft.flag) == ("draft", "models/small.GGUF", "models/small.GGUF")
    with pytest.raises(ValueError, match="gguf"):
        Speculation.from_flag("ngarm")  # a mistyped mode is not taken for a file
    with pytest.raises(ValueError, match="1 to 32"):
        Speculation("ngram", draft_max=0)


def test_drafts_back_off_and_follow_the_answer() -> None:
    source = NgramSlots()
    d = SlotDrafts(source.history([1, 2, 3, 9, 1, 2]))

    def propose(limit: int) -> list[int]:
        want = d.want(limit, None)
        return source.draft_all([(0, d.history, want)])[0] if want else []

    assert propose(8) == [3, 9, 1, 2]  # what followed "1 2" before
    assert propose(0) == []
    d.checked(4, 0)  # rejected at the first token: the next lookup is skipped
    assert propose(8) == []
    d.taken(3)
    d.plain_next = True
    assert propose(8) == []  # after a near tie, one plain step
    assert propose(8) == [9, 1]  # the length halved after the miss
    assert (d.drafted, d.accepted) == (4, 0)
