"""The window's chat through one slot of the server's batch: the chat engine's events and answers,
the shared cache's figures, reasoning apart, stop, overflow, and a scheduler that goes away."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.batch.slot_chat import SlotChat
from prefill.engine.errors import ContextOverflow, EngineError
from prefill.engine.events import Finished, PrefillDone, Token
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, OverflowSettings, SamplingSettings
from tests.engine.vocab_models import write_thinker

GREEDY = SamplingSettings(temperature=0.0, max_tokens=24)
LOAD = LoadSettings(n_ctx=1024, n_gpu_layers="none", n_threads=1)
ASK = [Message("system", "Answer briefly."), Message("user", "What is the capital of France?")]


def open_slots(model: Path, n_seq: int = 2, settings: LoadSettings = LOAD) -> BatchScheduler:
    return BatchScheduler(load_batch_model(model, settings, n_seq))


@pytest.fixture(scope="module")
def smol_slots(smollm2: Path) -> Iterator[BatchScheduler]:
    s = open_slots(smollm2)
    yield s
    s.close()


def answer(chat: SlotChat | ChatEngine, messages: list[Message]) -> tuple[list[object], Finished]:
    events = list(chat.stream(ChatRequest.of(messages, GREEDY)))
    end = events[-1]
    assert isinstance(end, Finished)
    return events, end


def test_a_slot_answers_as_the_chat_engine_does(smollm2: Path, smol_slots: BatchScheduler) -> None:
    engine = ChatEngine.load(smollm2, LOAD)
    try:
        _, alone = answer(engine, ASK)
        counted = engine.count_tokens(ChatRequest.of(ASK))
    finally:
        engine.close()
    chat = SlotChat(smol_slots)
    events, f = answer(chat, ASK)
    assert f.text == alone.text and f.reason == alone.reason
    assert chat.count_tokens(ChatRequest.of(ASK)) == counted == f.metrics.prompt_tokens
    assert isinstance(events[0], PrefillDone) and events[0].prompt_tokens == counted
    assert "".join(e.text for e in events if isinstance(e, Token)) == f.text
    # The KV fill is the shared cache's: every slot's cells out of every slot's context.
    assert f.metrics.kv_total == smol_slots.n_ctx_seq * smol_slots.n_slots
    assert f.metrics.kv_used >= counted + f.metrics.completion_tokens - 1
    assert chat.kv_snapshot().kv_used == sum(s.kv_cells for s in smol_slots.snapshot().slots)

    follow = [*ASK, Message("assistant", f.text), Message("user", "And of Spain?")]
    events, _ = answer(chat, follow)
    prefill = events[0]
    assert isinstance(prefill, PrefillDone) and prefill.cached_tokens >= counted  # the slot kept the chat


def test_a_stop_ends_the_answer_and_frees_the_slot(smol_slots: BatchScheduler) -> None:
    chat = SlotChat(smol_slots)
    cancel = threading.Event()
    events = []
    story = ChatRequest.of([Message("user", "Write a long story.")], SamplingSettings(max_tokens=2000))
    for ev in chat.stream(story, cancel):
        events.append(ev)
        if isinstance(ev, Token):
            cancel.set()
    f = events[-1]
    assert isinstance(f, Finished) and f.reason == "cancelled" and f.metrics.completion_tokens < 2000
    assert all(s.state == "idle" for s in smol_slots.snapshot().slots)


def test_a_reader_that_goes_away_frees_its_slot(smol_slots: BatchScheduler) -> None:
    chat = SlotChat(smol_slots)
    stream = chat.stream(ChatRequest.of([Message("user", "Write a long story.")], SamplingSettings(max_tokens=2000)))
    next(s for s in stream if isinstance(s, Token))
    stream.close()  # the window dropped the generator
    for _ in range(600):  # the scheduler frees the slot at its next step
        if all(s.state == "idle" for s in smol_slots.snapshot().slots):
            break
        threading.Event().wait(0.05)
    assert all(s.state == "idle" for s in smol_slots.snapshot().slots)


def test_overflow_policies_apply_to_one_slot(tiny_model: Path) -> None:
    sched = open_slots(tiny_model, 2, LoadSettings(n_ctx=256, n_gpu_layers="none", n_threads=1))
    try:
        chat = SlotChat(sched)
        long = [Message("user", "word " * 200), Message("assistant", "ok"), Message("user", "word " * 40)]
        with pytest.raises(ContextOverflow):
            list(chat.stream(ChatRequest.of(long, GREEDY, overflow=OverflowSettings(policy="stop"))))
        events = list(chat.stream(ChatRequest.of(long, GREEDY, overflow=OverflowSettings(policy="rolling_window"))))
        prefill = next(e for e in events if isinstance(e, PrefillDone))
        assert prefill.dropped_messages == (0, 1) and "left out" in prefill.overflow_note
        assert isinstance(events[-1], Finished)
    finally:
        sched.close()


def test_thinking_comes_apart_from_the_answer(tmp_path: Path) -> None:
    sched = open_slots(write_thinker(tmp_path / "thinker.gguf"), 1, LoadSettings(n_ctx=512, n_gpu_layers="none"))
    try:
        chat = SlotChat(sched)
        events = list(chat.stream(ChatRequest.of([Message("user", "What is 2+2?")], SamplingSettings(temperature=1.5))))
        f = events[-1]
        assert isinstance(f, Finished)
        assert f.text == "The answer: 4!" and f.reasoning == "Two and two make four."
        assert "".join(e.text for e in events if isinstance(e, Token) and e.reasoning).strip() == f.reasoning
        assert 0 < f.metrics.reasoning_tokens < f.metrics.completion_tokens and f.metrics.answer_ttft_ms > 0
    finally:
        sched.close()


def test_a_closed_server_fails_the_chat_in_words(tiny_model: Path) -> None:
    sched = open_slots(tiny_model, 1)
    chat = SlotChat(sched)
    sched.close()
    with pytest.raises(EngineError, match="shutting down"):
        list(chat.stream(ChatRequest.of([Message("user", "hi")], GREEDY)))
