"""Property-based fuzz of the Responses door (`prefill.server.responses.parse`): whatever a client
sends, the parser returns a checked request or raises an `ApiError` with a 4xx status and a worded
message, which OpenAI's error shape carries; nothing else escapes. What it lets through is what the
engine can take (valid Unicode, sampling inside its ranges) and what the response can echo (JSON that
encodes), with or without a kept conversation before it."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from prefill.server.errors import ApiError
from prefill.server.fields import parse_json
from prefill.server.responses.parse import Ask, parse_responses
from tests.json_fuzz import FUZZ, GONE, mutated
from tests.json_fuzz import json_values as json_values_of
from tests.server.request_texts import request_texts

MODEL = "SmolLM2-135M-Instruct"
PIXEL = ("data:image/png;base64,"
         "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
json_values = json_values_of([0, 1, -1, 2, 1024, 2**31, 2**63, 1e308, 5e-324, -0.0, 1.0000001])
KEPT = [{"type": "message", "role": "user", "content": "Weather in Rome?"},
        {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_9", "name": "weather",
         "arguments": "{\"city\": \"Rome\"}"}]


def _valid() -> dict[str, Any]:
    return {
        "model": MODEL,
        "instructions": "Be brief.",
        "input": [
            {"role": "developer", "content": "Use the tools."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo?"},
                                                            {"type": "input_image", "image_url": PIXEL,
                                                             "detail": "auto"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{\"city\": \"Oslo\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "Sunny."},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [{"type": "function", "name": "weather", "description": "The weather.", "strict": True,
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "function", "name": "weather"},
        "parallel_tool_calls": False,
        "text": {"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": True}},
        "reasoning": {"effort": "low", "summary": "auto"},
        "max_output_tokens": 64,
        "temperature": 0.5,
        "top_p": 0.9,
        "store": True,
        "stream": True,
        "previous_response_id": "resp_1",
        "metadata": {"who": "test"},
        "user": "someone",
        "truncation": "disabled",
    }


PATHS: list[tuple[Any, ...]] = [
    (k,) for k in _valid()
] + [
    ("input", 0), ("input", 0, "role"), ("input", 0, "content"), ("input", 1, "content"), ("input", 1, "content", 0),
    ("input", 1, "content", 0, "text"), ("input", 1, "content", 1, "image_url"), ("input", 1, "content", 1, "detail"),
    ("input", 1, "content", 0, "type"), ("input", 2, "type"), ("input", 3, "call_id"), ("input", 3, "name"),
    ("input", 3, "arguments"), ("input", 4, "call_id"), ("input", 4, "output"), ("input", 5, "content", 0),
    ("input", 5, "role"), ("input", 6), ("input", 3, "type"), ("tools", 0), ("tools", 0, "name"),
    ("tools", 0, "type"), ("tools", 0, "parameters"), ("tools", 0, "description"), ("tools", 0, "strict"),
    ("tool_choice", "type"), ("tool_choice", "name"), ("text", "format"), ("text", "format", "type"),
    ("text", "format", "schema"), ("text", "format", "name"), ("reasoning", "effort"), ("reasoning", "summary"),
    ("metadata", "who"),
]
bodies = st.builds(mutated, st.just(_valid()), st.sampled_from(PATHS), st.just(GONE) | json_values)


def _door(obj: dict[str, Any]) -> Ask | None:
    try:
        ask = parse_responses(obj, MODEL)
    except ApiError as e:
        assert 400 <= e.status < 500 and e.message.strip(), (e.status, e.message)
        json.dumps(e.body()).encode("utf-8")
        return None
    for history in (None, KEPT):
        req = ask.request(history)
        for text in request_texts(req):
            assert isinstance(text, str)
            text.encode("utf-8")
        assert req.messages and all(m.role in ("system", "user", "assistant", "tool") for m in req.messages)
        assert all(0 <= r.message < len(req.messages) and req.messages[r.message].role == "user" for r in req.images)
    json.dumps(ask.echo, ensure_ascii=False).encode("utf-8")  # the response repeats it
    json.dumps(list(ask.input), ensure_ascii=False)  # kept as it came
    s = ask.sampling
    assert 0 <= s.temperature <= 2 and 0 <= s.top_p <= 1 and math.isfinite(s.temperature)
    assert type(s.max_tokens) is int and s.max_tokens >= 1
    t = ask.tools
    assert not t.tools or t.choice in ("auto", "none", "required", *(x.name for x in t.tools))
    return ask


@FUZZ
@given(bodies)
@example(mutated(_valid(), ("input", 6, "content"), "\ud800"))
@example(mutated(_valid(), ("input", 4, "call_id"), "\udfff"))
@example(mutated(_valid(), ("input", 0, "role"), ["user"]))
@example(mutated(_valid(), ("tools", 0, "description"), "\ud800"))
@example(mutated(_valid(), ("text", "format", "name"), "\ud800"))
@example(mutated(_valid(), ("user",), "\ud800"))
@example(mutated(_valid(), ("input", 1, "content", 1, "image_url"), "\ud800"))
@example(mutated(_valid(), ("previous_response_id",), "\ud800"))
@example(mutated(_valid(), ("input", 3, "arguments"), {"city": "\ud800"}))
def test_a_near_valid_body_is_a_request_or_a_4xx(body: dict[str, Any]) -> None:
    _door(body)


@FUZZ
@given(json_values)
def test_any_json_value_is_a_request_or_a_4xx(value: Any) -> None:
    obj = value if isinstance(value, dict) else {"model": MODEL, "input": value}
    _door(obj)
    try:
        _door(parse_json(json.dumps(value).encode()))
    except ApiError:
        pass


def test_the_valid_body_reads_as_openai_means_it() -> None:
    ask = _door(_valid())
    assert ask is not None and ask.stream and ask.store and ask.previous == "resp_1"
    req = ask.request()
    roles = [m.role for m in req.messages]
    assert roles == ["system", "system", "user", "assistant", "tool", "assistant", "user"]
    assert req.messages[0].content == "Be brief." and req.messages[1].content == "Use the tools."
    assert req.messages[3].tool_calls[0].arguments == '{"city": "Oslo"}'
    assert req.messages[4].content == "Sunny." and req.messages[4].name == "weather"
    assert [(r.message, r.url[:22]) for r in req.images] == [(2, "data:image/png;base64,")]
    assert req.tools.choice == "weather" and not req.tools.parallel
    assert req.tools.response_format is not None and req.tools.response_format.kind == "json_schema"
    assert req.options.think and req.options.reasoning_effort == "low"
    assert req.sampling.max_tokens == 64 and req.sampling.temperature == 0.5
    assert ask.echo["tool_choice"] == {"type": "function", "name": "weather"}
    assert ask.echo["text"]["format"]["name"] == "answer" and ask.echo["metadata"] == {"who": "test"}


def test_a_kept_conversation_comes_first_and_names_the_calls_it_made() -> None:
    body = {"model": MODEL, "instructions": "Be brief.",
            "input": [{"type": "function_call_output", "call_id": "call_9", "output": "Rainy."}]}
    ask = _door(body)
    assert ask is not None
    req = ask.request(KEPT)
    assert [m.role for m in req.messages] == ["system", "user", "assistant", "tool"]
    assert req.messages[3].name == "weather" and req.messages[3].tool_call_id == "call_9"
    with_image = ask.request([{"role": "user", "content": [{"type": "input_image", "image_url": PIXEL}]}, *KEPT])
    assert [r.message for r in with_image.images] == [1]


def test_what_the_responses_api_maps_and_refuses() -> None:
    plain = _door({"model": MODEL, "input": "Hello"})
    assert plain is not None and plain.input == ({"type": "message", "role": "user", "content": "Hello"},)
    assert plain.store and not plain.stream and plain.tools.choice == "none"
    assert plain.request().sampling.max_tokens > 1000  # no max_output_tokens: the context bounds it
    off = mutated(_valid(), ("reasoning",), {"effort": "none"})
    assert _door(off).options.reasoning_budget == 0  # type: ignore[union-attr]
    required = mutated(_valid(), ("tool_choice",), "required")
    assert _door(required).tools.choice == "required"  # type: ignore[union-attr]
    json_object = mutated(_valid(), ("text",), {"format": {"type": "json_object"}})
    assert _door(json_object).tools.response_format.kind == "json_object"  # type: ignore[union-attr]
    assert _door(mutated(_valid(), ("tools", 0, "type"), "web_search")) is None
    assert _door(mutated(_valid(), ("background",), True)) is None
    assert _door(mutated(_valid(), ("input",), [])) is None
    assert _door(mutated(_valid(), ("input", 2, "type"), "item_reference")) is None
    assert _door(mutated(_valid(), ("truncation",), "auto")).compaction == "auto"  # type: ignore[union-attr]
