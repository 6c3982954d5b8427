"""Property-based fuzz of Ollama's door (`prefill.server.ollama.parse`): whatever a client sends to
/api/chat or /api/generate, the parser returns a checked `GenerationRequest` or raises an `ApiError` with
a 4xx status and a worded message, which Ollama's error shape carries; nothing else escapes. What it lets
through is what the engine can take: valid Unicode, sampling inside its ranges, every tool result
answering a call."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from prefill.server.core import GenerationRequest
from prefill.server.errors import ApiError
from prefill.server.fields import MAX_STOPS, parse_json
from prefill.server.ollama.errors import ollama_error
from prefill.server.ollama.parse import load_only, parse_chat, parse_generate
from tests.json_fuzz import FUZZ, GONE, mutated
from tests.json_fuzz import json_values as json_values_of
from tests.server.request_texts import request_texts as message_texts

MODEL = "smollm2:latest"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
json_values = json_values_of([0, 1, -1, -2, 2, 1024, 2**31, 2**63, 1e308, 5e-324, -0.0, 1.0000001])
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _chat() -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?", "images": [PIXEL]},
            {"role": "assistant", "content": "", "thinking": "Ask the tool.",
             "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
            {"role": "tool", "tool_name": "weather", "content": "Sunny."},
            {"role": "assistant", "content": "It is sunny."},
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [{"type": "function", "function": {"name": "weather", "description": "The weather.",
                                                    "parameters": SCHEMA}}],
        "format": SCHEMA,
        "think": "low",
        "stream": False,
        "keep_alive": "5m",
        "options": {"temperature": 0.5, "top_p": 0.9, "top_k": 20, "min_p": 0.05, "seed": 7, "num_predict": 64,
                    "stop": ["\n\nUser:"], "repeat_penalty": 1.1, "repeat_last_n": -1, "num_ctx": 4096,
                    "num_gpu": 99},
    }


def _generate() -> dict[str, Any]:
    return {"model": MODEL, "prompt": "Why is the sky blue?", "system": "Be brief.", "images": [PIXEL],
            "format": "json", "think": False, "raw": False, "context": [1, 2, 3], "suffix": "",
            "options": {"temperature": 0, "num_predict": 8, "stop": "."}}


CHAT_PATHS: list[tuple[Any, ...]] = [
    (k,) for k in ("messages", "tools", "format", "think", "stream", "options")
] + [
    ("messages", 0), ("messages", 0, "role"), ("messages", 0, "content"), ("messages", 1, "images"),
    ("messages", 1, "images", 0), ("messages", 2, "tool_calls"), ("messages", 2, "tool_calls", 0),
    ("messages", 2, "tool_calls", 0, "function"), ("messages", 2, "tool_calls", 0, "function", "arguments"),
    ("messages", 2, "tool_calls", 0, "function", "name"), ("messages", 2, "thinking"), ("messages", 3, "tool_name"),
    ("messages", 3, "role"), ("messages", 3, "tool_call_id"), ("tools", 0), ("tools", 0, "function", "parameters"),
    ("format", "properties"), ("options", "temperature"), ("options", "top_p"), ("options", "top_k"),
    ("options", "min_p"), ("options", "seed"), ("options", "num_predict"), ("options", "stop"),
    ("options", "stop", 0), ("options", "repeat_penalty"), ("options", "repeat_last_n"), ("options", "num_ctx"),
    ("options", "mirostat"), ("options", "frequency_penalty"),
]
GENERATE_PATHS: list[tuple[Any, ...]] = [
    (k,) for k in ("prompt", "system", "images", "format", "think", "raw", "context", "suffix", "template",
                   "options", "stream")
] + [("images", 0), ("options", "num_predict"), ("options", "stop")]
chats = st.builds(mutated, st.just(_chat()), st.sampled_from(CHAT_PATHS), st.just(GONE) | json_values)
generates = st.builds(mutated, st.just(_generate()), st.sampled_from(GENERATE_PATHS), st.just(GONE) | json_values)


def _texts(req: GenerationRequest) -> Iterator[str]:
    yield req.prompt
    yield from (m.reasoning for m in req.messages)
    yield from message_texts(req)


def _door(obj: dict[str, Any], generate: bool = False) -> GenerationRequest | None:
    try:
        req = (parse_generate if generate else parse_chat)(obj, MODEL)
    except ApiError as e:
        assert 400 <= e.status < 500 and e.message.strip(), (e.status, e.message)
        assert ollama_error(e) == {"error": e.message}
        json.dumps(ollama_error(e)).encode("utf-8")
        return None
    for text in _texts(req):
        assert isinstance(text, str)
        text.encode("utf-8")
    s = req.sampling
    assert 0 <= s.temperature <= 5 and 0 <= s.top_p <= 1 and math.isfinite(s.temperature)
    assert type(s.top_k) is int and s.top_k >= 0 and type(s.max_tokens) is int and s.max_tokens >= 1
    assert len(s.stop) <= MAX_STOPS and all(s.stop) and 0 < s.repeat_penalty <= 10
    assert all(m.role in ("system", "user", "assistant", "tool") for m in req.messages)
    assert all(m.tool_call_id for m in req.messages if m.role == "tool")
    assert all(ref.param.startswith(("messages[", "images[")) for ref in req.images)
    return req


@FUZZ
@given(chats)
@example(mutated(_chat(), ("messages", 5, "content"), "\ud800"))
@example(mutated(_chat(), ("messages", 0, "role"), ["user"]))
@example(mutated(_chat(), ("think",), "max"))
@example(mutated(_chat(), ("options", "repeat_penalty"), 0))
@example(mutated(_chat(), ("messages", 2, "tool_calls", 0, "function", "arguments"), {"city": "\ud800"}))
@example(mutated(_chat(), ("options", "stop"), ["x"] * (MAX_STOPS + 1)))
def test_a_near_valid_chat_is_a_request_or_a_4xx(body: dict[str, Any]) -> None:
    _door(body)


@FUZZ
@given(generates)
@example(mutated(_generate(), ("suffix",), "}"))
@example(mutated(_generate(), ("raw",), True))
def test_a_near_valid_generate_is_a_request_or_a_4xx(body: dict[str, Any]) -> None:
    _door(body, generate=True)


@FUZZ
@given(json_values)
def test_any_json_value_is_a_request_or_a_4xx(value: Any) -> None:
    for generate in (False, True):
        field = "prompt" if generate else "messages"
        _door(value if isinstance(value, dict) else {"model": MODEL, field: value}, generate)
        try:
            _door(parse_json(json.dumps(value).encode()), generate)
        except ApiError:
            pass


def test_the_valid_chat_reads_as_ollama_means_it() -> None:
    req = _door(_chat())
    assert req is not None and not req.stream and req.kind == "chat"
    assert [m.role for m in req.messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    call = req.messages[2].tool_calls[0]
    assert (call.id, call.name, json.loads(call.arguments)) == ("call_2_0", "weather", {"city": "Oslo"})
    assert req.messages[2].reasoning == "Ask the tool."
    assert (req.messages[3].tool_call_id, req.messages[3].name, req.messages[3].content) == (
        "call_2_0", "weather", "Sunny.")  # the result answers the call of its tool
    assert [(r.message, r.param, r.url[:13]) for r in req.images] == [(1, "messages[1].images[0]", "data:;base64,")]
    assert req.tools.choice == "auto" and req.tools.tools[0].name == "weather"
    assert req.tools.response_format is not None and req.tools.response_format.kind == "json_schema"
    assert req.options.think and req.options.reasoning_effort == "low"
    s = req.sampling
    assert (s.temperature, s.top_k, s.seed, s.max_tokens, s.stop) == (0.5, 20, 7, 64, ("\n\nUser:",))
    assert s.repeat_last_n == 65536  # -1: the whole context


def test_what_ollama_defaults_maps_and_refuses() -> None:
    bare = _door({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
    assert bare is not None and bare.stream and bare.options.think is None  # streamed unless told not to
    assert bare.sampling.max_tokens > 100_000  # no num_predict: no limit but the context
    assert load_only(_door({"model": MODEL}))  # type: ignore[arg-type]
    assert load_only(_door({"model": MODEL, "prompt": ""}, generate=True))  # type: ignore[arg-type]
    off = _door(mutated(_chat(), ("think",), False))
    assert off is not None and off.options.think is False and off.options.reasoning_budget == 0
    gen = _door(_generate(), generate=True)
    assert gen is not None and [m.role for m in gen.messages] == ["system", "user"]
    assert gen.tools.response_format is not None and gen.tools.response_format.kind == "json_object"
    assert gen.sampling.stop == (".",) and gen.sampling.temperature == 0
    raw = _door({"model": MODEL, "prompt": "<|im_start|>user\nhi", "raw": True}, generate=True)
    assert raw is not None and raw.kind == "completion" and raw.prompt.startswith("<|im_start|>")
    for body, word in ((mutated(_generate(), ("suffix",), "}"), "suffix"),
                       (mutated(_generate(), ("template",), "{{ .Prompt }}"), "template"),
                       (mutated(_chat(), ("options", "mirostat"), 2), "mirostat"),
                       (mutated(_chat(), ("messages", 0, "images"), [PIXEL]), "images")):
        try:
            (parse_generate if "prompt" in body else parse_chat)(body, MODEL)
        except ApiError as e:
            assert e.status == 400 and word in e.message
        else:
            raise AssertionError(f"{word} was not refused")
