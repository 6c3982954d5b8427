"""A whole tool round trip through `prefill serve`, as the official openai client makes it: the scripted
round tripper calls weather(city="Oslo"), and once the call and a result holding "Sunny" are sent
back it answers in plain text with finish_reason "stop"; whole and streamed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.engine.vocab_models import write_round_tripper
from tests.server.conftest import Served, start_server, stop_server
from tests.server.test_tool_calls_api import ASK, WEATHER

ANSWER = "It is sunny in Oslo."


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model = write_round_tripper(tmp_path_factory.mktemp("tripper") / "tripper.gguf")
    s = start_server(model, "--parallel", "1", "--ctx", "512")
    yield s
    stop_server(s)


def with_result(call: dict[str, Any], result: str) -> list[dict[str, Any]]:
    """The question, the assistant's call, and the tool's answer to it."""
    turn = {"role": "assistant", "content": None, "tool_calls": [call]}
    return [*ASK, turn, {"role": "tool", "tool_call_id": call["id"], "content": result}]


def test_the_call_then_the_answer_from_its_result(served: Served) -> None:
    client = served.client()
    first = client.chat.completions.create(model=served.model_id, messages=ASK, tools=[WEATHER], temperature=0)
    assert first.choices[0].finish_reason == "tool_calls"
    (call,) = first.choices[0].message.tool_calls
    assert call.function.name == "weather" and json.loads(call.function.arguments) == {"city": "Oslo"}
    messages = with_result(call.model_dump(), "Sunny, 21 °C")
    done = client.chat.completions.create(model=served.model_id, messages=messages, tools=[WEATHER], temperature=0)
    choice = done.choices[0]
    assert (choice.finish_reason, choice.message.content, choice.message.tool_calls) == ("stop", ANSWER, None)
    again = client.chat.completions.create(model=served.model_id, messages=with_result(call.model_dump(), "Rain"),
                                           tools=[WEATHER], temperature=0)
    assert again.choices[0].finish_reason == "tool_calls"  # no marker in the result: it calls again


def test_streamed_the_call_then_the_answer(served: Served) -> None:
    client = served.client()

    def stream(messages: list[dict[str, Any]]) -> tuple[str, list[Any], str | None]:
        text, parts, reason = "", [], None
        for chunk in client.chat.completions.create(model=served.model_id, messages=messages, tools=[WEATHER],
                                                    temperature=0.8, seed=7, stream=True):
            delta = chunk.choices[0].delta
            text += delta.content or ""
            parts += delta.tool_calls or []
            reason = chunk.choices[0].finish_reason or reason
        return text, parts, reason

    text, parts, reason = stream(ASK)
    assert (text, reason) == ("", "tool_calls")
    call = {"id": parts[0].id, "type": "function", "function": {
        "name": parts[0].function.name, "arguments": "".join(p.function.arguments or "" for p in parts)}}
    assert call["function"]["name"] == "weather" and json.loads(call["function"]["arguments"]) == {"city": "Oslo"}
    text, parts, reason = stream(with_result(call, "Sunny, 21 °C"))
    assert (text, parts, reason) == (ANSWER, [], "stop")
