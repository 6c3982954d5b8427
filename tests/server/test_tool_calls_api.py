"""Tools through `prefill serve`, as the official openai client sends and reads them: a model that
calls a tool gives `tool_calls` and finish_reason "tool_calls", whole and streamed as deltas."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import Served

WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Oslo?"}]


@pytest.fixture(scope="module")
def served(caller_server: Served) -> Served:
    return caller_server


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


# --- constrained: a real model (SmolLM2, 135M) made to call, and to answer in a schema ----------------
def _valid(value: object, schema: dict) -> bool:
    """The small part of JSON Schema these tests use."""
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return (isinstance(value, dict) and all(k in value for k in schema.get("required", ()))
                and (schema.get("additionalProperties", True) or set(value) <= set(props))
                and all(_valid(v, props[k]) for k, v in value.items() if k in props))
    if kind == "integer":
        return isinstance(value, int) and value >= schema.get("minimum", value)
    if kind == "string":
        return isinstance(value, str) and (value in schema["enum"] if "enum" in schema else True)
    return True


TRIP = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1},
                                         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "days", "unit"], "additionalProperties": False}


def test_tool_choice_required_makes_a_small_model_call_with_valid_arguments(prefill_server: Served) -> None:
    tools = [WEATHER, {"type": "function", "function": {"name": "plan_trip", "description": "Plan a trip.",
                                                       "parameters": TRIP}}]
    for choice in ("required", {"type": "function", "function": {"name": "plan_trip"}}):
        r = prefill_server.client().chat.completions.create(
            model=prefill_server.model_id, messages=[{"role": "user", "content": "I want to go to Rome for a week."}],
            tools=tools, tool_choice=choice, temperature=0, max_tokens=120)
        # it calls until it ends, or until max_tokens cuts the call after: nothing of that one is text
        assert r.choices[0].finish_reason in ("tool_calls", "length"), r.choices[0].message
        assert not r.choices[0].message.content
        for call in r.choices[0].message.tool_calls:
            schema = next(t["function"]["parameters"] for t in tools if t["function"]["name"] == call.function.name)
            assert _valid(json.loads(call.function.arguments), schema), call.function.arguments
        if isinstance(choice, dict):
            assert {c.function.name for c in r.choices[0].message.tool_calls} == {"plan_trip"}


def test_a_json_schema_answer_validates(prefill_server: Served) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "trip", "schema": TRIP, "strict": True}}
    r = prefill_server.client().chat.completions.create(
        model=prefill_server.model_id, messages=[{"role": "user", "content": "A trip to Oslo, please."}],
        response_format=fmt, temperature=0, max_tokens=120)
    assert _valid(json.loads(r.choices[0].message.content), TRIP), r.choices[0].message.content
    obj = prefill_server.client().chat.completions.create(
        model=prefill_server.model_id, messages=[{"role": "user", "content": "Name a cat, as JSON."}],
        response_format={"type": "json_object"}, temperature=0, frequency_penalty=1.5, max_tokens=400)
    assert obj.choices[0].finish_reason == "stop", obj.choices[0].message.content  # it closed the object itself
    assert isinstance(json.loads(obj.choices[0].message.content), dict)


def test_a_schema_that_makes_no_grammar_is_a_400(prefill_server: Served) -> None:
    import openai

    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array", "prefixItems": False}}}
    with pytest.raises(openai.BadRequestError) as e:
        prefill_server.client().chat.completions.create(
            model=prefill_server.model_id, messages=ASK, response_format=fmt, max_tokens=5)
    assert e.value.status_code == 400 and "admits no value" in str(e.value)
