"""The tool loop: rounds of model, approval and tool until the model answers without calls, the
round limit, or Stop. On the scripted model that answers every turn with weather(city="Oslo"),
through the real chat engine (so the KV prefix is really reused), with tools faked here; the scripted
backend (tests/scripted_backend.py) or a scripted stream stands in for the model where only the loop's
own choices are tested."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from prefill.engine.chat_backend import Event
from prefill.engine.errors import ContextOverflow
from prefill.engine.events import Finished, PrefillDone, Token, ToolCalled
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import ChatRequest, Tool
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.session.tool_loop import (
    Decision,
    LoopEvent,
    LoopFinished,
    RoundStarted,
    ToolApprovals,
    ToolCallDone,
    ToolCallStarted,
    run_tool_loop,
)
from tests.engine.vocab_models import write_caller
from tests.scripted_backend import Answer, ScriptedBackend, tool_call

WEATHER = Tool("weather", "The weather in a city.",
               json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
SETTINGS = LoadSettings(n_ctx=1024, n_gpu_layers="none", n_threads=1)
ASK = ChatRequest((Message("user", "What is the weather in Oslo?"),), SamplingSettings(temperature=0.0),
                  tools=(WEATHER,))


@dataclass(frozen=True)
class Result:
    text: str
    is_error: bool = False


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatEngine]:
    e = ChatEngine.load(write_caller(tmp_path_factory.mktemp("caller") / "caller.gguf"), SETTINGS)
    yield e
    e.close()


@pytest.fixture
def caller(engine: ChatEngine) -> ChatEngine:
    engine.reset_cache()
    return engine


class Recorder:
    """A stream that keeps the requests it was given."""

    def __init__(self, engine: ChatEngine) -> None:
        self.engine = engine
        self.requests: list[ChatRequest] = []

    def __call__(self, request: ChatRequest, cancel: threading.Event | None) -> Iterator[Event]:
        self.requests.append(request)
        yield from self.engine.stream(request, cancel)


def sunny(call: ToolCall, cancel: threading.Event | None) -> Result:
    return Result(f"Sunny in {json.loads(call.arguments)['city']}, 21 °C.")


def allow(call: ToolCall) -> Decision:
    return Decision.ALLOW_ONCE


def last(events: list[LoopEvent]) -> LoopFinished:
    end = events[-1]
    assert isinstance(end, LoopFinished)
    return end


def well_formed(messages: tuple[Message, ...]) -> None:
    """Every call an assistant message makes is answered by a tool message naming it, in order."""
    for i, m in enumerate(messages):
        if m.tool_calls:
            answers = messages[i + 1:i + 1 + len(m.tool_calls)]
            assert [(a.role, a.tool_call_id, a.name) for a in answers] == [("tool", c.id, c.name) for c in m.tool_calls]


def test_the_calls_run_round_after_round_until_the_limit(caller: ChatEngine) -> None:
    stream = Recorder(caller)
    events = list(run_tool_loop(stream, ASK, sunny, allow, max_rounds=2))
    end = last(events)
    assert end.reason == "max_rounds" and end.note == "stopped after 2 tool rounds: the model asked for more calls, " \
        "which were not run"
    assert end.rounds == 3 and len(stream.requests) == 3  # two rounds of calls, then the one that is not run
    assert end.finished.reason == "tool_calls" and end.finished.text == ""
    kinds = [type(e).__name__ for e in events if not isinstance(e, Token)]
    one_round = ["PrefillDone", "ToolCalled", "Finished"]
    assert [k for k in kinds if k != "MetricsSnapshot"] == [
        "RoundStarted", *one_round, "ToolCallStarted", "ToolCallDone",
        "RoundStarted", *one_round, "ToolCallStarted", "ToolCallDone",
        "RoundStarted", *one_round, "ToolCallDone", "LoopFinished"]
    assert [e.n for e in events if isinstance(e, RoundStarted)] == [1, 2, 3]
    ran = [c for c in end.calls if not c.not_run]
    oslo = ("weather", {"city": "Oslo"}, "Sunny in Oslo, 21 °C.")
    assert [(c.call.name, json.loads(c.call.arguments), c.text, c.round) for c in ran] == [(*oslo, 1), (*oslo, 2)]
    assert end.calls[-1].not_run and end.calls[-1].is_error and "stops after 2 tool rounds" in end.calls[-1].text

    # Round 2 is given the conversation grown by round 1: the call, then its result.
    user, call_turn, result = stream.requests[1].messages
    assert user == ASK.messages[0]
    assert call_turn.role == "assistant" and [c.name for c in call_turn.tool_calls] == ["weather"]
    assert (result.role, result.content, result.tool_call_id, result.name) == (
        "tool", "Sunny in Oslo, 21 °C.", call_turn.tool_calls[0].id, "weather")
    assert stream.requests[1].tools == ASK.tools and stream.requests[1].sampling == ASK.sampling
    assert end.messages[:3] == stream.requests[1].messages and len(end.messages) == 7
    well_formed(end.messages)

    # Its prompt only grew, so the KV cache of round 1 is its prefix.
    prefills = [e for e in events if isinstance(e, PrefillDone)]
    assert prefills[0].cached_tokens == 0
    for before, after in zip(prefills, prefills[1:]):
        assert after.prompt_tokens > before.prompt_tokens
        assert after.cached_tokens >= before.prompt_tokens  # the whole previous prompt, and more
        assert after.evaluated_tokens < after.prompt_tokens - before.prompt_tokens + 8
    assert [t.cached_tokens for t in end.timings] == [p.cached_tokens for p in prefills]


def test_the_time_is_split_between_model_tools_and_prefill(caller: ChatEngine) -> None:
    def slow_sunny(call: ToolCall, cancel: threading.Event | None) -> Result:
        time.sleep(0.1)
        return sunny(call, cancel)

    events = list(run_tool_loop(caller.stream, ASK, slow_sunny, allow, max_rounds=1))
    end = last(events)
    first, second = end.timings
    assert first.overhead_s is None and second.overhead_s is not None
    assert first.model_s > 0 and first.tools_s >= 0.1 and second.tools_s == 0.0
    assert 0.0 <= second.overhead_s < 0.1  # the tool's 100 ms are not Prefill's
    started = [e for e in events if isinstance(e, RoundStarted)]
    assert started[0].overhead_ms is None and started[1].overhead_ms == pytest.approx(second.overhead_s * 1000)
    assert end.overheads_s == (second.overhead_s,)
    done = [e for e in events if isinstance(e, ToolCallDone)]
    assert done[0].elapsed_s >= 0.1 and done[0].approval_s >= 0.0


# ---- where the model is not the point: the scripted backend that calls weather(city="Oslo") every turn ----

def oslo_caller() -> ScriptedBackend:
    return ScriptedBackend(fallback=Answer(tool_calls=(tool_call("weather", '{"city": "Oslo"}'),)))


def test_a_denied_call_is_not_run_and_the_model_is_told() -> None:
    ran: list[ToolCall] = []
    asked: list[ToolCall] = []

    def run(call: ToolCall, cancel: threading.Event | None) -> Result:
        ran.append(call)
        return Result("never")

    def deny(call: ToolCall) -> Decision:
        asked.append(call)
        return Decision.DENY

    events = list(run_tool_loop(oslo_caller().stream, ASK, run, deny, max_rounds=1))
    end = last(events)
    assert not ran and len(asked) == 1  # the call of round 2 is past the limit: not asked about
    assert not any(isinstance(e, ToolCallStarted) for e in events)
    denied = end.calls[0]
    assert denied.denied and denied.is_error and not denied.not_run and denied.elapsed_s == 0.0
    assert denied.text == "The user denied this call: weather was not run."
    assert end.messages[2] == Message("tool", denied.text, tool_call_id=denied.call.id, name="weather")
    assert end.rounds == 2  # a denial does not end the turn: the model reads it and goes on
    well_formed(end.messages)


def test_always_allow_is_remembered_by_the_approvals_owner() -> None:
    asked: list[ToolCall] = []

    def always(call: ToolCall) -> Decision:
        asked.append(call)
        return Decision.ALWAYS_ALLOW

    caller = oslo_caller()
    approvals = ToolApprovals()
    first = last(list(run_tool_loop(caller.stream, ASK, sunny, always, max_rounds=3, approvals=approvals)))
    assert len(asked) == 1 and approvals.keys() == {"weather"}
    assert [c.text for c in first.calls if not c.not_run] == ["Sunny in Oslo, 21 °C."] * 3
    second = last(list(run_tool_loop(caller.stream, ASK, sunny, always, max_rounds=1, approvals=approvals)))
    assert len(asked) == 1 and not second.calls[0].not_run  # a later turn of the same owner: not asked again
    approvals.forget()
    last(list(run_tool_loop(caller.stream, ASK, sunny, always, max_rounds=1, approvals=approvals)))
    assert len(asked) == 2


def test_stop_during_a_tool_ends_the_turn() -> None:
    cancel = threading.Event()
    told: list[bool] = []
    caller = oslo_caller()

    def slow(call: ToolCall, stop: threading.Event | None) -> Result:
        assert stop is cancel
        threading.Thread(target=cancel.set).start()  # Stop, pressed on another thread while the tool runs
        told.append(stop.wait(30))
        return Result("Stopped before it answered.", is_error=True)

    events = list(run_tool_loop(caller.stream, ASK, slow, allow, max_rounds=5, cancel=cancel))
    assert told == [True]
    end = last(events)
    assert end.reason == "cancelled" and end.rounds == 1 and end.note == ""
    stopped = end.calls[0]
    assert stopped.stopped and stopped.is_error and stopped.text == "Stopped before it answered."
    assert sum(isinstance(e, RoundStarted) for e in events) == 1 and len(caller.requests) == 1  # no round after Stop
    assert end.messages[-1].role == "tool"
    well_formed(end.messages)


def test_each_round_reads_the_last_one_from_the_cache() -> None:
    """The loop only appends, so each round's prompt starts with the last round's prompt and answer."""
    caller = oslo_caller()
    events = list(run_tool_loop(caller.stream, ASK, sunny, allow, max_rounds=2))
    prefills = [e for e in events if isinstance(e, PrefillDone)]
    assert [p.cached_tokens for p in prefills] == [0, prefills[0].prompt_tokens, prefills[1].prompt_tokens]
    assert all(p.prompt_tokens == caller.count_tokens(r) for p, r in zip(prefills, caller.requests, strict=True))
    assert [t.cached_tokens for t in last(events).timings] == [p.cached_tokens for p in prefills]


# ---- the loop's own choices, on a scripted stream -----------------------------------------------------

CALL_A = ToolCall("call_a", "weather", '{"city": "Oslo"}')
CALL_B = ToolCall("call_b", "clock", "{}")
CLOCK = Tool("clock", "The time.", json.dumps({"type": "object"}))
ASK_BOTH = ChatRequest(ASK.messages, ASK.sampling, tools=(WEATHER, CLOCK))


class Script:
    """A stream that ends each round with the next of `ends` (and a PrefillDone before it), or raises it."""

    def __init__(self, *ends: Finished | Exception) -> None:
        self.ends = list(ends)
        self.requests: list[ChatRequest] = []

    def __call__(self, request: ChatRequest, cancel: threading.Event | None) -> Iterator[Event]:
        self.requests.append(request)
        end = self.ends.pop(0)
        if isinstance(end, Exception):
            raise end
        yield PrefillDone(10, 0, 10, 1.0)
        for call in end.tool_calls:
            yield ToolCalled(call, 1)
        if end.text:
            yield Token(end.text, 1)
        yield end


def test_an_answer_without_calls_is_one_round() -> None:
    script = Script(Finished("stop", "Hello."))
    end = last(list(run_tool_loop(script, ASK, sunny, allow)))
    assert (end.reason, end.rounds, end.calls, end.note) == ("done", 1, (), "")
    assert end.messages == (*ASK.messages, Message("assistant", "Hello."))


def test_a_malformed_call_runs_nothing_and_its_text_stands() -> None:
    text = '<tool_call>{"name": "weather", "arguments": {"city": </tool_call>'
    script = Script(Finished("stop", text, malformed_calls=("the arguments of weather are not JSON",)))

    def never(call: ToolCall, cancel: threading.Event | None) -> Result:
        raise AssertionError("nothing to run")

    end = last(list(run_tool_loop(script, ASK, never, allow)))
    assert end.reason == "done" and end.rounds == 1 and not end.calls
    assert end.finished.text == text and end.finished.malformed_calls
    assert end.messages[-1] == Message("assistant", text)


def test_two_calls_in_one_answer_run_in_order_then_the_model_answers() -> None:
    script = Script(Finished("tool_calls", "Let me look.", tool_calls=(CALL_A, CALL_B)),
                    Finished("stop", "Sunny at noon."))
    end = last(list(run_tool_loop(script, ASK_BOTH, lambda c, _: Result(f"{c.name} ok"), allow)))
    assert end.reason == "done" and end.finished.text == "Sunny at noon." and end.rounds == 2
    assert [m.role for m in script.requests[1].messages] == ["user", "assistant", "tool", "tool"]
    assert script.requests[1].messages[1] == Message("assistant", "Let me look.", tool_calls=(CALL_A, CALL_B))
    assert [m.content for m in end.messages[2:4]] == ["weather ok", "clock ok"]
    well_formed(end.messages)


def test_a_stop_before_the_first_word_adds_nothing() -> None:
    end = last(list(run_tool_loop(Script(Finished("cancelled", "")), ASK, sunny, allow)))
    assert end.reason == "cancelled" and end.messages == ASK.messages


def test_calls_of_an_answer_cut_short_are_answered_but_not_run() -> None:
    script = Script(Finished("length", "", tool_calls=(CALL_A,)))
    end = last(list(run_tool_loop(script, ASK, sunny, allow)))
    assert end.reason == "done" and end.calls[0].not_run
    assert end.calls[0].text == "Not run: the answer reached its token limit."
    well_formed(end.messages)


def test_stop_while_asked_runs_nothing() -> None:
    cancel = threading.Event()

    def asked_then_stopped(call: ToolCall) -> Decision:
        cancel.set()
        return Decision.ALLOW_ONCE

    script = Script(Finished("tool_calls", "", tool_calls=(CALL_A, CALL_B)))
    end = last(list(run_tool_loop(script, ASK, sunny, asked_then_stopped, cancel=cancel)))
    assert end.reason == "cancelled" and [c.not_run for c in end.calls] == [True, True]
    assert end.calls[0].text == "Not run: the user stopped the answer."
    well_formed(end.messages)


def test_max_rounds_zero_runs_no_call() -> None:
    end = last(list(run_tool_loop(Script(Finished("tool_calls", "", tool_calls=(CALL_A,))), ASK, sunny, allow,
                                  max_rounds=0)))
    assert end.reason == "max_rounds" and end.note.startswith("stopped after 0 tool rounds")
    assert end.calls[0].not_run


def test_results_that_outgrow_the_context_end_the_turn_with_what_it_has() -> None:
    first = Finished("tool_calls", "", tool_calls=(CALL_A,))
    script = Script(first, ContextOverflow(1000, 256, 1024))
    end = last(list(run_tool_loop(script, ASK, sunny, allow)))
    assert end.reason == "context_full" and end.finished == first and end.rounds == 1
    assert end.note == ("stopped after 1 tool round: with the tools' results the conversation no longer fits the "
                        "context (the prompt is 1000 tokens and 256 are reserved for the answer, 232 more than the "
                        "1024-token context)")
    assert [m.role for m in end.messages] == ["user", "assistant", "tool"]
    with pytest.raises(ContextOverflow):  # the person's own turn: raised, as without tools
        list(run_tool_loop(Script(ContextOverflow(1000, 256, 1024)), ASK, sunny, allow))
