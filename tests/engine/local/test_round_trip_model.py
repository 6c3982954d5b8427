"""The scripted round tripper (tests/engine/vocab_models.py): through the real chat engine it calls
weather(city="Oslo") first, answers in plain text once a tool result holding "Sunny" is in the
prompt, and calls again after a result without it; so the tool loop ends by itself."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest

from prefill.engine.events import Finished, PrefillDone, Token, ToolCalled
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import ChatRequest, Tool
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.mcp_tools.results import ToolResult
from prefill.session.tool_loop import Decision, LoopFinished, RoundStarted, run_tool_loop
from tests.engine.vocab_models import write_round_tripper

WEATHER = Tool("weather", "The weather in a city.",
               json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
SETTINGS = LoadSettings(n_ctx=1024, n_gpu_layers="none", n_threads=1)
ANSWER = "It is sunny in Oslo."
GREEDY = SamplingSettings(temperature=0.0)
SAMPLED = SamplingSettings(temperature=0.8, seed=1234)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatEngine]:
    e = ChatEngine.load(write_round_tripper(tmp_path_factory.mktemp("tripper") / "tripper.gguf"), SETTINGS)
    yield e
    e.close()


@pytest.fixture
def engine(model: ChatEngine) -> ChatEngine:
    model.reset_cache()
    return model


def ask(sampling: SamplingSettings, *after: Message) -> ChatRequest:
    return ChatRequest((Message("user", "What is the weather in Oslo?"), *after), sampling, tools=(WEATHER,))


def end_of(events: list[object]) -> Finished:
    end = events[-1]
    assert isinstance(end, Finished), end
    return end


def called(end: Finished) -> list[tuple[str, object]]:
    return [(c.name, json.loads(c.arguments)) for c in end.tool_calls]


@pytest.mark.parametrize("sampling", [GREEDY, SAMPLED], ids=["greedy", "t0.8"])
def test_it_calls_then_answers_from_a_result_holding_the_marker(engine: ChatEngine, sampling: SamplingSettings) -> None:
    first = list(engine.stream(ask(sampling)))
    end = end_of(first)
    assert end.reason == "tool_calls" and called(end) == [("weather", {"city": "Oslo"})]
    assert [e.call for e in first if isinstance(e, ToolCalled)] == list(end.tool_calls)
    call = end.tool_calls[0]
    turn = Message("assistant", end.text, tool_calls=end.tool_calls)

    def after(result: str) -> Finished:
        tool = Message("tool", result, tool_call_id=call.id, name=call.name)
        return end_of(list(engine.stream(ask(sampling, turn, tool))))

    sunny = after("Sunny, 21 °C")
    assert (sunny.reason, sunny.text, sunny.tool_calls) == ("stop", ANSWER, ())
    # The same conversation whose result lacks the marker: the attention finds nothing, and it calls again
    rain = after("Rain")
    assert rain.reason == "tool_calls" and called(rain) == [("weather", {"city": "Oslo"})] and rain.text == ""


def test_offered_no_tools_a_result_still_turns_it_to_the_answer(engine: ChatEngine) -> None:
    """The branch reads the context, not the request: the same words stream as tokens."""
    events = list(engine.stream(replace(ask(GREEDY, Message("user", "Sunny")), tools=())))
    assert end_of(events).reason == "stop"
    assert "".join(e.text for e in events if isinstance(e, Token)) == ANSWER


def test_the_tool_loop_ends_by_itself_after_the_result(engine: ChatEngine) -> None:
    ran: list[ToolCall] = []

    def run_tool(call: ToolCall, cancel: threading.Event | None) -> ToolResult:
        ran.append(call)
        return ToolResult(f"Sunny in {json.loads(call.arguments)['city']}, 21 °C.", is_error=False, elapsed_s=0.0)

    events = list(run_tool_loop(engine.stream, ask(GREEDY), run_tool, lambda call: Decision.ALLOW_ONCE,
                                max_rounds=4))
    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert (end.reason, end.rounds, end.note) == ("done", 2, "")
    assert (end.finished.reason, end.finished.text) == ("stop", ANSWER)
    assert [(c.name, json.loads(c.arguments)) for c in ran] == [("weather", {"city": "Oslo"})]
    assert [(c.text, c.round, c.not_run) for c in end.calls] == [("Sunny in Oslo, 21 °C.", 1, False)]
    assert [e.n for e in events if isinstance(e, RoundStarted)] == [1, 2]
    assert [m.role for m in end.messages] == ["user", "assistant", "tool", "assistant"]
    assert end.messages[-1].content == ANSWER
    first, second = [e for e in events if isinstance(e, PrefillDone)]
    assert second.cached_tokens >= first.prompt_tokens  # round 2 reused round 1's prompt from the KV cache
    assert second.prompt_tokens > first.prompt_tokens
