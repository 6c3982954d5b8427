"""Tools through `prefill serve`, as the official openai client sends and reads them: a model that
calls a tool gives `tool_calls` and finish_reason "tool_calls", whole and streamed as deltas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.vocab_models import write_caller
from tests.server.conftest import Served, start_server, stop_server

WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Oslo?"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model = write_caller(tmp_path_factory.mktemp("caller") / "caller.gguf")
    s = start_server(model, "--parallel", "1", "--ctx", "512")
    yield s
    stop_server(s)


def test_a_call_comes_back_as_tool_calls(served: Served) -> None:
    r = served.client().chat.completions.create(model=served.model_id, messages=ASK, tools=[WEATHER],
                                                temperature=0)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "weather" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"city": "Oslo"}
    assert not choice.message.content


def test_a_streamed_call_comes_as_deltas(served: Served) -> None:
    stream = served.client().chat.completions.create(model=served.model_id, messages=ASK, tools=[WEATHER],
                                                     temperature=0, stream=True)
    parts, text, reasons = [], "", []
    for chunk in stream:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        parts += delta.tool_calls or []
        reasons.append(chunk.choices[0].finish_reason)
    assert text == "" and reasons[-1] == "tool_calls"
    assert parts[0].index == 0 and parts[0].id.startswith("call_") and parts[0].function.name == "weather"
    assert json.loads("".join(p.function.arguments or "" for p in parts)) == {"city": "Oslo"}


def test_a_round_trip_is_rendered_and_tool_choice_none_hides_the_tools(served: Served) -> None:
    client = served.client()
    first = client.chat.completions.create(model=served.model_id, messages=ASK, tools=[WEATHER], temperature=0)
    call = first.choices[0].message.tool_calls[0]
    messages = [*ASK, first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "3 °C and snow"}]
    again = client.chat.completions.create(model=served.model_id, messages=messages, tools=[WEATHER], temperature=0,
                                           max_tokens=40)
    assert again.usage.prompt_tokens > first.usage.prompt_tokens  # the call and its result are in the prompt
    plain = client.chat.completions.create(model=served.model_id, messages=ASK, tools=[WEATHER], tool_choice="none",
                                           temperature=0)
    assert plain.choices[0].finish_reason == "stop" and plain.choices[0].message.tool_calls is None
    assert plain.usage.prompt_tokens < first.usage.prompt_tokens  # no tools in its prompt
