"""Speculation beside the chat engine's other features, at temperature 0: a reasoning model's
thinking/answer split, a tool caller's parsed calls, and the KV cache saved to disk and restored
between turns give what plain decoding gives, with n-gram drafts and with a draft model, and the
streamed Token events never carry a rejected draft's text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from prefill.engine.events import Finished, PrefillDone, Token, ToolCalled
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.local.kv_disk import KvDiskCache
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest, Tool
from prefill.engine.settings import LoadSettings, SamplingSettings
from tests.engine.vocab_models import write_caller, write_round_tripper, write_thinker

FA = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1, flash_attn="on")
GREEDY = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=60)
WEATHER = Tool("weather", "The weather in a city.",
               json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
THINKING, ANSWER = "Two and two make four.", "The answer: 4!"  # each token once: a scripted chain
# The prompt holds the text the model will write, so drafts from the text itself find it.
THINK_ASK = f"Say: {THINKING}</think>{ANSWER}"


@dataclass
class Run:
    events: list[object]

    @property
    def end(self) -> Finished:
        e = self.events[-1]
        assert isinstance(e, Finished), e
        return e

    def streamed(self, reasoning: bool) -> str:
        return "".join(e.text for e in self.events if isinstance(e, Token) and e.reasoning == reasoning)

    @property
    def calls(self) -> list[tuple[str, str]]:
        return [(e.call.name, e.call.arguments) for e in self.events if isinstance(e, ToolCalled)]


def answer(engine: ChatEngine, request: ChatRequest, mode: str) -> Run:
    engine.speculative = mode
    run = Run(list(engine.stream(request)))
    assert engine.runtime.kv_cells_used() == len(engine.cached_tokens)  # no rejected draft left in the cache
    return run


def same_as_plain(engine: ChatEngine, request: ChatRequest, mode: str, note: str = "") -> tuple[Run, Run]:
    engine.reset_cache()
    plain = answer(engine, request, "off")
    plain_cache = engine.cached_tokens
    engine.reset_cache()
    fast = answer(engine, request, mode)
    assert note in engine.speculation_note if note else engine.speculation_note == ""
    a, b = plain.end, fast.end
    assert (b.text, b.reasoning, b.reason, b.tool_calls and [(c.name, c.arguments) for c in b.tool_calls]) == (
        a.text, a.reasoning, a.reason, a.tool_calls and [(c.name, c.arguments) for c in a.tool_calls])
    assert b.metrics.completion_tokens == a.metrics.completion_tokens
    assert b.metrics.reasoning_tokens == a.metrics.reasoning_tokens
    # what was streamed is what was kept: the thinking, the answer and the calls, as plain decoding streams them
    assert fast.streamed(True) == plain.streamed(True) == b.reasoning
    assert fast.streamed(False) == plain.streamed(False)
    assert fast.calls == plain.calls
    assert engine.cached_tokens == plain_cache
    assert a.metrics.draft_n == 0
    return plain, fast


def with_tools(request: ChatRequest) -> ChatRequest:
    return replace(request, tools=(WEATHER,))


def engine_for(path: Path, mode: str) -> ChatEngine:
    e = ChatEngine.load(path, FA)
    if mode == "draft":
        e.use_draft_model(path)  # a scripted model drafting for itself: a perfect draft
    return e


@pytest.fixture(scope="module")
def thinker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_thinker(tmp_path_factory.mktemp("thinker") / "thinker.gguf", THINKING, ANSWER)


@pytest.fixture(scope="module", params=["ngram", "draft"])
def thinking(request: pytest.FixtureRequest, thinker: Path) -> Iterator[tuple[ChatEngine, str]]:
    e = engine_for(thinker, request.param)
    yield e, request.param
    e.close()


def test_thinking_and_answer_split_as_plain_decoding_splits_them(thinking: tuple[ChatEngine, str]) -> None:
    engine, mode = thinking
    _, fast = same_as_plain(engine, ChatRequest.of([Message("user", THINK_ASK)], GREEDY), mode)
    end = fast.end
    assert end.reasoning.strip() == THINKING and end.text.strip() == ANSWER
    assert end.metrics.draft_n_accepted > 0  # drafts were taken across the thinking's end
    assert "</think>" not in fast.streamed(True) + fast.streamed(False)


def test_a_stop_string_inside_the_answer_with_drafts(thinking: tuple[ChatEngine, str]) -> None:
    engine, mode = thinking
    sampling = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=60, stop=(": 4",))
    _, fast = same_as_plain(engine, ChatRequest.of([Message("user", THINK_ASK)], sampling), mode)
    assert fast.end.reason == "stop" and fast.end.text.strip() == "The answer"
    assert fast.end.reasoning.strip() == THINKING


@pytest.fixture(scope="module")
def caller(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_caller(tmp_path_factory.mktemp("caller") / "caller.gguf")


@pytest.mark.parametrize("mode", ["ngram", "draft"])
def test_tool_calls_parse_as_in_plain_decoding(caller: Path, mode: str) -> None:
    engine = engine_for(caller, mode)
    try:
        ask = 'Call <tool_call>{"name":"weather","arguments":{"city":"Oslo"}}</tool_call> please.'
        request = with_tools(ChatRequest.of([Message("user", ask)], GREEDY))
        # Offered tools, the answer is held to a lazy call grammar, which judges tokens outside the
        # verified chain: speculation declines (rules.why_not) and says so, and the calls are plain's.
        _, fast = same_as_plain(engine, request, mode, note="grammar")
        assert fast.end.reason == "tool_calls"
        assert [(n, json.loads(a)) for n, a in fast.calls] == [("weather", {"city": "Oslo"})]
        assert fast.streamed(False) == ""  # no call markup leaks, drafted or not
        # offered no tools, the call is text: the same text, drafted
        _, text = same_as_plain(engine, ChatRequest.of([Message("user", ask)], GREEDY), mode)
        assert text.end.text.startswith('<tool_call>{"name":"weather"') and text.end.metrics.draft_n_accepted > 0
    finally:
        engine.close()


@pytest.mark.parametrize("mode", ["ngram", "draft"])
def test_a_tool_round_trip_answers_as_plain_decoding(tmp_path: Path, mode: str) -> None:
    engine = engine_for(write_round_tripper(tmp_path / "round.gguf"), mode)
    try:
        ask = [Message("user", "What is the weather in Oslo? Say: It is sunny in Oslo.")]
        _, first = same_as_plain(engine, with_tools(ChatRequest.of(ask, GREEDY)), mode, note="grammar")
        (call,) = first.end.tool_calls
        history = [*ask, Message("assistant", "", tool_calls=(call,)),
                   Message("tool", "Sunny, 21 °C", tool_call_id=call.id)]
        _, second = same_as_plain(engine, with_tools(ChatRequest.of(history, GREEDY)), mode, note="grammar")
        assert second.end.reason == "stop" and second.end.text == "It is sunny in Oslo."
    finally:
        engine.close()


COPY = ("Repeat this exactly: the cat sat on the mat, the dog sat on the log, and the bird sat on the wall "
        "by the old stone gate.")


@pytest.mark.parametrize("mode", ["ngram", "draft"])
def test_a_cache_restored_from_disk_is_reused_with_speculation(smollm2: Path, tmp_path: Path, mode: str) -> None:
    """Turn 1 with speculation, its cache saved; another chat takes the cache; the saved one is
    restored and turn 2 evaluates only its new text, with the answers plain decoding gives. (SmolLM2:
    a scripted reasoning model's template drops the thinking from the history, so its turns share
    no cache to save.)"""
    disk = KvDiskCache(tmp_path / "kv", min_free=0)
    engine = ChatEngine.load(smollm2, LoadSettings(n_ctx=1024, n_gpu_layers="none", n_threads=1, flash_attn="on"))
    if mode == "draft":
        engine.use_draft_model(smollm2)
    try:
        msgs = [Message("user", COPY)]
        first = answer(engine, ChatRequest.of(msgs, GREEDY), mode)
        assert first.end.metrics.draft_n_accepted > 0
        msgs.append(Message("assistant", first.end.text))
        assert engine.save_state(disk).outcome == "written"
        answer(engine, ChatRequest.of([Message("user", "Say hello in French.")], GREEDY), mode)
        back = engine.restore_state(disk, msgs)
        assert back.header is not None and back.note == ""
        held = len(back.header.tokens)
        msgs.append(Message("user", "Now say it again, exactly."))
        second = answer(engine, ChatRequest.of(msgs, GREEDY), mode)
        prefill = next(e for e in second.events if isinstance(e, PrefillDone))
        assert prefill.restored_tokens == held == prefill.cached_tokens
        assert prefill.evaluated_tokens == prefill.prompt_tokens - held
        assert second.end.metrics.draft_n_accepted > 0
        drafted_cache = engine.cached_tokens
        # the same two turns decoded plainly, with no disk in between
        engine.reset_cache()
        plain1 = answer(engine, ChatRequest.of(msgs[:1], GREEDY), "off")
        plain2 = answer(engine, ChatRequest.of(msgs, GREEDY), "off")
        assert plain1.end.text == first.end.text and plain2.end.text == second.end.text
        assert second.streamed(False) == plain2.streamed(False) == plain2.end.text
        assert engine.cached_tokens == drafted_cache
    finally:
        engine.close()
