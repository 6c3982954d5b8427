"""Property-based fuzz of the Anthropic Messages door (`prefill.server.anthropic.parse`): whatever a
client sends, the parser returns a checked `GenerationRequest` or raises an `ApiError` with a 4xx
status and a worded message, which Anthropic's error shape carries; nothing else escapes. What it
lets through is what the engine can take: valid Unicode, sampling inside its ranges."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from prefill.server.anthropic.errors import anthropic_error
from prefill.server.anthropic.parse import MAX_STOPS, parse_messages
from prefill.server.core import GenerationRequest
from prefill.server.errors import ApiError
from prefill.server.fields import parse_json
from tests.json_fuzz import FUZZ, GONE, mutated
from tests.json_fuzz import json_values as json_values_of
from tests.server.request_texts import request_texts

MODEL = "SmolLM2-135M-Instruct"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
json_values = json_values_of([0, 1, -1, 2, 1024, 2**31, 2**63, 1e308, 5e-324, -0.0, 1.0000001])


def _valid() -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 64,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"},
                                         {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                      "data": PIXEL}}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "Ask the tool.", "signature": ""},
                                              {"type": "tool_use", "id": "toolu_1", "name": "weather",
                                               "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                                          "content": [{"type": "text", "text": "Sunny."}]}]},
            {"role": "assistant", "content": "It is sunny."},
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [{"name": "weather", "description": "The weather.",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "stop_sequences": ["\n\nHuman:"],
        "stream": True,
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 20,
        "metadata": {"user_id": "someone"},
    }


PATHS: list[tuple[Any, ...]] = [
    (k,) for k in ("model", "max_tokens", "system", "messages", "tools", "tool_choice", "thinking", "stop_sequences",
                   "stream", "temperature", "top_p", "top_k")
] + [
    ("system", 0), ("system", 0, "text"), ("messages", 0), ("messages", 0, "role"), ("messages", 0, "content"),
    ("messages", 0, "content", 0), ("messages", 0, "content", 1, "source"), ("messages", 0, "content", 1, "source",
                                                                             "data"),
    ("messages", 0, "content", 1, "source", "media_type"), ("messages", 1, "content", 1, "input"),
    ("messages", 1, "content", 1, "id"), ("messages", 1, "content", 1, "name"), ("messages", 1, "content", 0, "type"),
    ("messages", 2, "content", 0, "tool_use_id"), ("messages", 2, "content", 0, "is_error"),
    ("messages", 2, "content", 0, "content"), ("messages", 2, "content", 0, "content", 0, "text"),
    ("messages", 3, "content"), ("tools", 0), ("tools", 0, "name"), ("tools", 0, "input_schema"),
    ("tools", 0, "description"), ("tool_choice", "type"), ("tool_choice", "disable_parallel_tool_use"),
    ("thinking", "type"), ("thinking", "budget_tokens"), ("stop_sequences", 0),
]
bodies = st.builds(mutated, st.just(_valid()), st.sampled_from(PATHS), st.just(GONE) | json_values)


def _door(obj: dict[str, Any], counting: bool = False) -> GenerationRequest | None:
    try:
        req = parse_messages(obj, MODEL, counting)
    except ApiError as e:
        assert 400 <= e.status < 500 and e.message.strip(), (e.status, e.message)
        body = anthropic_error(e)
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        json.dumps(body).encode("utf-8")
        return None
    for text in request_texts(req):
        assert isinstance(text, str)
        text.encode("utf-8")
    s = req.sampling
    assert 0 <= s.temperature <= 1 and 0 <= s.top_p <= 1 and math.isfinite(s.temperature)
    assert type(s.top_k) is int and s.top_k >= 0 and type(s.max_tokens) is int and s.max_tokens >= 1
    assert len(s.stop) <= MAX_STOPS and all(s.stop)
    assert req.messages and all(m.role in ("system", "user", "assistant", "tool") for m in req.messages)
    assert not req.tools.tools or req.tools.choice in ("auto", "none", "required", *(t.name for t in req.tools.tools))
    return req


@FUZZ
@given(bodies)
@example(mutated(_valid(), ("messages", 4, "content"), "\ud800"))
@example(mutated(_valid(), ("messages", 2, "content", 0, "tool_use_id"), "\udfff"))
@example(mutated(_valid(), ("messages", 0, "role"), ["user"]))
@example(mutated(_valid(), ("thinking", "budget_tokens"), True))
@example(mutated(_valid(), ("messages", 0, "content", 1, "source", "data"), "\ud800"))
@example(mutated(_valid(), ("messages", 1, "content", 1, "input"), {"city": "\ud800"}))
def test_a_near_valid_message_is_a_request_or_a_4xx(body: dict[str, Any]) -> None:
    _door(body)
    _door(body, counting=True)


@FUZZ
@given(json_values)
def test_any_json_value_is_a_request_or_a_4xx(value: Any) -> None:
    obj = value if isinstance(value, dict) else {"model": MODEL, "max_tokens": 8, "messages": value}
    _door(obj)
    try:
        _door(parse_json(json.dumps(value).encode()))
    except ApiError:
        pass


def test_the_valid_body_reads_as_anthropic_means_it() -> None:
    req = _door(_valid())
    assert req is not None and req.stream
    roles = [m.role for m in req.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert req.messages[3].content == "Sunny." and req.messages[3].name == "weather"
    assert req.messages[2].tool_calls[0].arguments == '{"city": "Oslo"}'
    assert [(r.message, r.url[:22]) for r in req.images] == [(1, "data:image/png;base64,")]
    assert req.tools.choice == "auto" and not req.tools.parallel
    assert req.options.think and req.options.reasoning_budget == 1024
    assert req.sampling.max_tokens == 64 and req.sampling.stop == ("\n\nHuman:",)


def test_what_anthropic_requires_and_maps() -> None:
    body = _valid()
    del body["max_tokens"]
    assert _door(body) is None and _door(body, counting=True) is not None  # count_tokens takes no max_tokens
    failed = mutated(_valid(), ("messages", 2, "content", 0, "is_error"), True)
    assert _door(failed).messages[3].content == "Error: Sunny."  # type: ignore[union-attr]
    any_tool = mutated(_valid(), ("tool_choice",), {"type": "any"})
    assert _door(any_tool).tools.choice == "required"  # type: ignore[union-attr]
    named = mutated(_valid(), ("tool_choice",), {"type": "tool", "name": "weather"})
    assert _door(named).tools.choice == "weather"  # type: ignore[union-attr]
    off = mutated(_valid(), ("thinking",), {"type": "disabled"})
    assert _door(off).options.reasoning_budget == 0  # type: ignore[union-attr]
    server_tool = mutated(_valid(), ("tools", 0, "type"), "web_search_20250305")
    assert _door(server_tool) is None
