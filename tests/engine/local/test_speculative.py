"""Speculative decoding with n-gram drafts: the same answer as plain greedy decoding, sooner."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.local import chat_engine
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings

PASSAGE = (
    "The river town woke slowly that spring. Fishermen mended their nets along the stone quay while the "
    "baker set out loaves still warm from the oven. Children ran between the market stalls, chasing a dog "
    "that had stolen a string of sausages, and the old ferryman watched them with a patient smile. By noon "
    "the fog had lifted from the water, revealing the hills beyond, green with new grass and dotted with "
    "sheep. The mayor, a stout woman with a booming voice, announced that the annual boat race would be held "
    "on the first Sunday of May, and that the winner would receive a silver cup and a barrel of cider."
)
COPY = "Repeat this passage exactly:\n\n" + PASSAGE
QUESTION = "Why is the sky blue? Answer in three sentences."
GREEDY = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=220)


@dataclass
class Run:
    events: list[object]
    prefill: PrefillDone
    finished: Finished

    @property
    def text(self) -> str:
        return self.finished.text


@pytest.fixture(scope="module")
def fa_engine(smollm2: Path) -> Iterator[ChatEngine]:
    """Speculation needs flash attention (batched logits equal to one-token ones)."""
    e = ChatEngine.load(smollm2, LoadSettings(n_ctx=2048, n_gpu_layers="none", flash_attn="on"))
    yield e
    e.close()


@pytest.fixture
def engine(fa_engine: ChatEngine) -> Iterator[ChatEngine]:
    fa_engine.reset_cache()
    yield fa_engine
    fa_engine.speculative = "off"


def run(engine: ChatEngine, msgs: list[Message], mode: str, sampling: SamplingSettings = GREEDY,
        cancel_at: int = 0) -> Run:
    engine.speculative = mode
    cancel = threading.Event()
    events: list[object] = []
    for ev in engine.stream(ChatRequest.of(msgs, sampling), cancel):
        events.append(ev)
        if cancel_at and isinstance(ev, Token) and ev.n_tokens >= cancel_at:
            cancel.set()
    prefill = next(e for e in events if isinstance(e, PrefillDone))
    assert isinstance(events[-1], Finished)
    # The cache holds exactly the tokens the engine believes it holds: no draft left behind.
    assert engine.runtime.kv_cells_used() == len(engine.cached_tokens)
    draft = engine.draft_model
    if draft is not None:  # and the draft model's cache is what it believes it holds
        assert draft.runtime.kv_cells_used() == len(draft.cached_tokens)
    return Run(events, prefill, events[-1])


def both(engine: ChatEngine, msgs: list[Message], sampling: SamplingSettings = GREEDY,
         cancel_at: int = 0, mode: str = "ngram") -> tuple[Run, Run]:
    """The same prompt plain and with `mode`'s drafts, from an empty cache each; both leave the same cache."""
    engine.reset_cache()
    plain = run(engine, msgs, "off", sampling, cancel_at)
    plain_cache = engine.cached_tokens
    engine.reset_cache()
    fast = run(engine, msgs, mode, sampling, cancel_at)
    assert engine.cached_tokens == plain_cache
    return plain, fast


def same(plain: Run, fast: Run) -> None:
    assert fast.text == plain.text
    assert fast.finished.reason == plain.finished.reason
    assert fast.finished.metrics.completion_tokens == plain.finished.metrics.completion_tokens
    pieces = [e.text for e in fast.events if isinstance(e, Token)]
    assert "".join(pieces) == fast.text  # streamed as it ends: no rejected draft shown


# --- on the real model ----------------------------------------------------------------------------
def test_copy_prompt_same_text_with_drafts_accepted(engine: ChatEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat_engine, "SNAPSHOT_EVERY_S", 0.0)  # a live snapshot after every step, to check them
    plain, fast = both(engine, [Message("user", COPY)])
    same(plain, fast)
    assert plain.finished.metrics.draft_n == 0
    m = fast.finished.metrics
    assert m.draft_n_accepted > 20 and m.draft_n >= m.draft_n_accepted
    assert m.draft_drift == 0.0  # measured: Q4_1's batches on the CPU are its one-token decodes, bit for bit
    live = [e for e in fast.events if isinstance(e, MetricsSnapshot)]
    assert len(live) > 1 and all(s.draft_n >= s.draft_n_accepted for s in live)
    assert any(s.draft_n_accepted > 0 for s in live)  # the drafts show while the answer streams
    assert live[-1].draft_n <= m.draft_n


def test_plain_question_same_text(engine: ChatEngine) -> None:
    same(*both(engine, [Message("user", QUESTION)]))


@pytest.mark.parametrize("max_tokens", [1, 2, 37])
def test_max_tokens_cuts_at_the_same_place(engine: ChatEngine, max_tokens: int) -> None:
    plain, fast = both(engine, [Message("user", COPY)], SamplingSettings(
        temperature=0.0, repeat_penalty=1.0, max_tokens=max_tokens))
    same(plain, fast)
    assert fast.finished.reason == "length" and fast.finished.metrics.completion_tokens == max_tokens


def test_stop_string_cuts_at_the_same_place(engine: ChatEngine) -> None:
    plain = both(engine, [Message("user", COPY)])[0]
    words = plain.text.split()
    assert len(words) > 20
    stop = words[15]  # a word well inside a run the drafts copy
    sampling = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=220, stop=(stop,))
    cut_plain, cut_fast = both(engine, [Message("user", COPY)], sampling)
    same(cut_plain, cut_fast)
    assert cut_fast.finished.reason == "stop" and stop not in cut_fast.text


def test_cancel_mid_answer_stops_at_the_same_token(engine: ChatEngine) -> None:
    plain, fast = both(engine, [Message("user", COPY)], cancel_at=30)
    same(plain, fast)
    assert fast.finished.reason == "cancelled" and fast.finished.metrics.completion_tokens == 30


def test_next_turn_reuses_the_prefix_as_without(engine: ChatEngine) -> None:
    def two_turns(mode: str) -> tuple[Run, Run]:
        engine.reset_cache()
        first = run(engine, [Message("user", COPY)], mode)
        msgs = [Message("user", COPY), Message("assistant", first.text), Message("user", "Now say it in one line.")]
        return first, run(engine, msgs, mode)

    plain = two_turns("off")
    fast = two_turns("ngram")
    for p, f in zip(plain, fast, strict=True):
        same(p, f)
        assert f.prefill.cached_tokens == p.prefill.cached_tokens
        assert f.prefill.prompt_tokens == p.prefill.prompt_tokens
    assert fast[1].prefill.cached_tokens > fast[0].prefill.prompt_tokens  # the first answer was kept


@pytest.mark.parametrize("sampling, why", [
    (SamplingSettings(temperature=0.7, seed=1, max_tokens=20), "greedy"),
    (SamplingSettings(temperature=0.0, repeat_penalty=1.1, max_tokens=20), "penalties"),
])
def test_off_unless_greedy_without_penalties(engine: ChatEngine, sampling: SamplingSettings, why: str) -> None:
    result = run(engine, [Message("user", COPY)], "ngram", sampling)
    assert result.finished.metrics.draft_n == 0
    assert why in engine.speculation_note
    engine.speculative = "off"
    run(engine, [Message("user", QUESTION)], "off", GREEDY)
    assert engine.speculation_note == ""


def test_off_without_flash_attention(smollm2: Path) -> None:
    e = ChatEngine.load(smollm2, LoadSettings(n_ctx=1024, n_gpu_layers="none", flash_attn="off"))
    try:
        result = run(e, [Message("user", COPY)], "ngram", SamplingSettings(
            temperature=0.0, repeat_penalty=1.0, max_tokens=20))
    finally:
        e.close()
    assert result.finished.metrics.draft_n == 0 and "flash attention" in e.speculation_note
