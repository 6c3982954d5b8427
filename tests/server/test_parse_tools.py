"""The door for tools and JSON answers: what a client sends becomes typed, or a 400 naming the field."""

from __future__ import annotations

import json

import pytest

from prefill.engine.message import ToolCall
from prefill.server.errors import ApiError
from prefill.server.openai.parse import parse_chat

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"type": "function",
           "function": {"name": "get_weather", "description": "The weather in a city.", "parameters": CITY}}


def chat(**fields: object):
    return parse_chat({"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}, "m")


def test_tools_and_the_choice_among_them_are_typed() -> None:
    req = chat(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "get_weather"}})
    r = req.chat_request
    assert [t.name for t in r.tools] == ["get_weather"] and r.tool_choice == "get_weather"
    assert json.loads(r.tools[0].parameters)["required"] == ["city"]
    assert r.tools[0].as_openai() == WEATHER
    assert chat(tools=[WEATHER]).chat_request.tool_choice == "auto"
    assert chat().chat_request.tool_choice == "none" and chat().chat_request.offered_tools == ()
    assert chat(tools=[WEATHER], tool_choice="none").chat_request.offered_tools == ()


def test_legacy_functions_are_mapped_onto_tools() -> None:
    r = chat(functions=[WEATHER["function"]], function_call={"name": "get_weather"}).chat_request
    assert [t.name for t in r.tools] == ["get_weather"] and r.tool_choice == "get_weather"


def test_a_round_trip_of_calls_and_results_is_read_back() -> None:
    messages = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3 °C, snow"},
    ]
    r = parse_chat({"model": "m", "messages": messages, "tools": [WEATHER]}, "m").chat_request
    assert r.messages[1].tool_calls == (ToolCall("call_1", "get_weather", '{"city": "Oslo"}'),)
    assert r.messages[1].tool_calls[0].arguments_object() == {"city": "Oslo"}
    assert (r.messages[2].role, r.messages[2].tool_call_id, r.messages[2].content) == ("tool", "call_1", "3 °C, snow")


def test_response_formats() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    r = chat(response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}).chat_request
    assert r.response_format is not None and r.response_format.kind == "json_schema"
    assert json.loads(r.response_format.schema) == schema
    assert chat(response_format={"type": "json_object"}).chat_request.response_format.kind == "json_object"
    assert chat(response_format={"type": "text"}).chat_request.response_format is None


@pytest.mark.parametrize(("fields", "param"), [
    ({"tools": {"a": 1}}, "tools"),
    ({"tools": [{"type": "function"}]}, "tools[0]"),
    ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, "tools[0].function"),
    ({"tools": [WEATHER, WEATHER]}, "tools"),
    ({"tools": [WEATHER], "functions": [WEATHER["function"]]}, "functions"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "other"}}}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ({"tools": [WEATHER], "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"response_format": {"type": "json_schema"}}, "response_format"),
    ({"response_format": {"type": "xml"}}, "response_format"),
    ({"tools": [{"type": "function", "function": {"name": "big", "parameters": {"d": "x" * 70_000}}}]},
     "tools[0].function.parameters"),
    ({"messages": [{"role": "tool", "content": "result"}]}, "messages[0]"),
    ({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {}}]}]},
     "messages[0].tool_calls[0]"),
])
def test_malformed_tool_fields_are_400_naming_the_field(fields: dict, param: str) -> None:
    with pytest.raises(ApiError) as e:
        chat(**fields)
    assert e.value.status == 400 and e.value.param == param, e.value.message


def test_a_schema_with_a_lone_surrogate_is_a_400_in_either_dialect() -> None:
    """JSON can spell \\ud800, which no UTF-8 text holds: a tool's schema that does is refused in words, never
    a 500 from encoding it (the Anthropic fuzz found it)."""
    from prefill.server.anthropic.parse import parse_messages

    schema = json.loads('{"type": "object", "properties": {"\\ud800": {"type": "string"}}}')
    with pytest.raises(ApiError, match="lone surrogate") as openai_error:
        parse_chat({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                    "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}]}, "m")
    assert openai_error.value.status == 400
    with pytest.raises(ApiError, match="lone surrogate") as anthropic_error:
        parse_messages({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
                        "tools": [{"name": "f", "input_schema": schema}]}, "m")
    assert anthropic_error.value.status == 400
