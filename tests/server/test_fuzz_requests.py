"""Property-based fuzz of the request door (`prefill.server.parse`): whatever a client sends, the
parser returns a checked `GenerationRequest` or raises an `ApiError` with a 4xx status and a worded
message; nothing else escapes. What it lets through is what the engine can take: texts that are
valid Unicode, sampling inside the documented ranges. One end-to-end check sends the same kinds of
bodies to a real server on SmolLM2 and sees no 5xx and nothing logged as an error."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prefill.engine.settings import LoadSettings
from prefill.server.errors import ApiError
from prefill.server.lifecycle import RunningServer, ServeOptions
from prefill.server.openai.parse import MAX_STOPS, GenerationRequest, parse_chat, parse_completion, parse_json
from tests.json_fuzz import FUZZ, GONE, mutated
from tests.json_fuzz import json_values as json_values_of

MODEL = "SmolLM2-135M-Instruct"
json_values = json_values_of([0, 1, -1, 2, 2**31 - 1, 2**31, 2**32, 2**63, -(2**63), 1e308, 5e-324, -0.0, 2.0000001])


def _valid_chat() -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "Plain text."}]},
            {"role": "user", "content": [{"type": "text", "text": "Say "}, {"type": "text", "text": "hi."}]},
            {"role": "assistant", "content": None},
            {"role": "user", "content": "Again."},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "n": 1,
        "max_tokens": 8,
        "max_completion_tokens": 8,
        "stop": ["\n\n", "END"],
        "seed": 7,
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 20,
        "min_p": 0.1,
        "frequency_penalty": 0.5,
        "presence_penalty": -0.5,
        "ignore_eos": False,
        "tools": [],
        "response_format": {"type": "text"},
        "logprobs": False,
    }


def _valid_completion() -> dict[str, Any]:
    body = {k: v for k, v in _valid_chat().items() if k not in ("messages", "tools", "response_format")}
    return {**body, "prompt": "Once upon a time", "echo": False, "suffix": None, "best_of": 1}


# Where one field is replaced: a top-level key, a message, one of its fields, a content part.
COMMON_PATHS: list[tuple[Any, ...]] = [
    (k,) for k in ("model", "stream", "stream_options", "n", "max_tokens", "max_completion_tokens", "stop", "seed",
                   "temperature", "top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "ignore_eos",
                   "logprobs")
] + [("stream_options", "include_usage"), ("stop", 0)]
CHAT_PATHS = COMMON_PATHS + [
    ("messages",), ("tools",), ("functions",), ("response_format",), ("response_format", "type"),
    ("messages", 0), ("messages", 0, "role"), ("messages", 0, "content"), ("messages", 3, "role"),
    ("messages", 3, "content"), ("messages", 4, "content"), ("messages", 1, "content", 0),
    ("messages", 2, "content", 1, "type"), ("messages", 2, "content", 1, "text"),
]
COMPLETION_PATHS = COMMON_PATHS + [("prompt",), ("echo",), ("suffix",), ("best_of",)]
replacements = st.just(GONE) | json_values
chat_bodies = st.builds(mutated, st.just(_valid_chat()), st.sampled_from(CHAT_PATHS), replacements)
completion_bodies = st.builds(mutated, st.just(_valid_completion()), st.sampled_from(COMPLETION_PATHS), replacements)


def _json_bytes(value: Any) -> bytes:
    # ensure_ascii writes a lone surrogate as its \ud800 escape, as a client's JSON may.
    return json.dumps(value).encode("ascii")


NUMBER_FIELDS = ["n", "max_tokens", "seed", "temperature", "top_p", "top_k", "min_p", "frequency_penalty"]


def _with_number(key: str, number: str) -> bytes:
    """A valid chat body whose `key` is written as this JSON number text."""
    return json.dumps({**_valid_chat(), key: "<number>"}).replace('"<number>"', number).encode("ascii")


bodies = st.one_of(
    st.binary(max_size=64),
    json_values.map(_json_bytes),
    chat_bodies.map(_json_bytes),
    chat_bodies.map(lambda b: json.dumps(b).encode("utf-16")),  # json.loads detects UTF-16 and 32
    st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n),  # nested past the recursion limit
    st.integers(4000, 6000).map(lambda n: b'{"n": ' + b"9" * n + b"}"),  # past int's digit limit
    st.sampled_from([b'{"a": "\xff"}', b"\xef\xbb\xbf{}", b'"\\ud800"', b"NaN", b"-Infinity", b"{}" * 2]),
    # Numbers json.dumps would not write: 1e999 reads as infinity.
    st.builds(_with_number, st.sampled_from(NUMBER_FIELDS), st.sampled_from(["1e999", "-1e400", "NaN", "1E+309"])),
)


# --- the property ---------------------------------------------------------------------------
def _texts(req: GenerationRequest) -> Iterator[str]:
    yield req.model
    yield req.prompt
    for m in req.messages:
        yield m.content
        yield m.reasoning
    yield from req.sampling.stop


def _check_request(req: GenerationRequest) -> None:
    """What the door lets through, the engine can take."""
    assert isinstance(req, GenerationRequest)
    for text in _texts(req):
        assert isinstance(text, str)
        text.encode("utf-8")  # a lone surrogate here would fail tokenizing: a 500, not a 400
    s = req.sampling
    for value in (s.temperature, s.top_p, s.min_p, s.frequency_penalty, s.presence_penalty, s.repeat_penalty):
        assert type(value) is float and math.isfinite(value)
    assert 0 <= s.temperature <= 2 and 0 <= s.top_p <= 1 and 0 <= s.min_p <= 1
    assert -2 <= s.frequency_penalty <= 2 and -2 <= s.presence_penalty <= 2 and s.repeat_penalty == 1.0
    assert type(s.top_k) is int and s.top_k >= 0
    assert type(s.seed) is int and (s.seed == -1 or 0 <= s.seed <= 2**31 - 1)
    assert type(s.max_tokens) is int and 1 <= s.max_tokens <= 1_048_576
    assert len(s.stop) <= MAX_STOPS and all(isinstance(t, str) and t for t in s.stop)
    assert type(req.stream) is bool and type(req.include_usage) is bool
    assert req.stream or not req.include_usage


def _check_refusal(e: ApiError) -> None:
    assert 400 <= e.status < 500, (e.status, e.message)
    assert isinstance(e.message, str) and e.message.strip()
    e.message.encode("utf-8")  # it goes into a JSON body and maybe a log line
    json.dumps(e.body())


def _door(call: Callable[[dict[str, Any], str], GenerationRequest], obj: dict[str, Any]) -> GenerationRequest | None:
    try:
        req = call(obj, MODEL)
    except ApiError as e:
        _check_refusal(e)
        return None
    _check_request(req)
    return req


@FUZZ
@given(bodies)
@example(b'{"temperature": ' + b"1" * 400 + b"}")
def test_any_body_is_a_request_or_a_4xx(body: bytes) -> None:
    try:
        obj = parse_json(body)
    except ApiError as e:
        _check_refusal(e)
        return
    assert isinstance(obj, dict)
    _door(parse_chat, obj)
    _door(parse_completion, obj)


@FUZZ
@given(json_values)
def test_any_json_value_is_a_request_or_a_4xx(value: Any) -> None:
    obj = value if isinstance(value, dict) else {"model": MODEL, "messages": value, "prompt": value}
    _door(parse_chat, obj)
    _door(parse_completion, obj)


@FUZZ
@given(chat_bodies)
@example(mutated(_valid_chat(), ("temperature",), 10**400))  # math.isfinite(int) overflowed
@example(mutated(_valid_chat(), ("messages", 4, "content"), "\ud800"))  # passed, then failed to tokenize
@example(mutated(_valid_chat(), ("stop", 0), "\udfff"))
@example(mutated(_valid_chat(), ("messages", 0, "role"), ["user"]))  # unhashable: a TypeError escaped
def test_a_near_valid_chat_is_a_request_or_a_4xx(body: dict[str, Any]) -> None:
    _door(parse_chat, body)


@FUZZ
@given(completion_bodies)
@example(mutated(_valid_completion(), ("prompt",), "tell \ud83d"))
@example(mutated(_valid_completion(), ("top_p",), -(10**400)))
def test_a_near_valid_completion_is_a_request_or_a_4xx(body: dict[str, Any]) -> None:
    _door(parse_completion, body)


def test_the_unchanged_bodies_are_valid() -> None:
    assert _door(parse_chat, _valid_chat()) is not None
    assert _door(parse_completion, _valid_completion()) is not None


# --- valid requests: the values pass through, inside their ranges ---------------------------
def _in(low: float, high: float) -> st.SearchStrategy[float | int]:
    return st.floats(low, high) | st.integers(math.ceil(low), math.floor(high))


SAMPLING: dict[str, st.SearchStrategy[Any]] = {
    "temperature": _in(0, 2), "top_p": _in(0, 1), "min_p": _in(0, 1), "top_k": st.integers(0, 10**6),
    "frequency_penalty": _in(-2, 2), "presence_penalty": _in(-2, 2),
    "seed": st.integers(min_value=-(2**70), max_value=2**70),  # OpenAI takes any integer
    "max_tokens": st.integers(1, 1_048_576), "stop": st.lists(st.text(max_size=5), max_size=MAX_STOPS),
    "stream": st.booleans(), "ignore_eos": st.booleans(),
}


@FUZZ
@given(st.fixed_dictionaries({}, optional=SAMPLING), st.booleans())
@example({"seed": 2**31}, True)  # folded to 2**31 and refused as above the maximum
@example({"seed": -1}, False)
def test_a_valid_request_is_taken_with_its_values(fields: dict[str, Any], chat: bool) -> None:
    base = _valid_chat() if chat else _valid_completion()
    for key in ("stream_options", "max_completion_tokens", *SAMPLING):
        base.pop(key, None)
    req = _door(parse_chat if chat else parse_completion, {**base, **fields})
    assert req is not None, fields
    s = req.sampling
    for key in ("temperature", "top_p", "min_p", "top_k", "frequency_penalty", "presence_penalty", "max_tokens",
                "ignore_eos"):
        if key in fields:
            assert getattr(s, key) == fields[key]
    assert s.stop == tuple(t for t in fields.get("stop", ()) if t)
    if "seed" in fields:  # a fixed seed stays fixed (the same seed, the same answer); a negative one is random
        assert s.seed == (fields["seed"] % 2**31 if fields["seed"] >= 0 else -1)


# --- end to end: a real server, no 5xx, nothing logged as an error --------------------------
class _Errors(logging.Handler):
    """Keeps every record at ERROR or above, from any thread (uvicorn's and the app's)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def live(smollm2: Path) -> Iterator[tuple[RunningServer, _Errors]]:
    errors = _Errors()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn.error")]  # uvicorn's does not propagate
    for logger in loggers:
        logger.addHandler(errors)
    settings_ = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1)
    server = RunningServer.open(ServeOptions(smollm2, settings_, port=0, parallel=1, max_queued=4))
    server.start_thread()
    yield server, errors
    server.stop()
    for logger in loggers:
        logger.removeHandler(errors)


# The answer stays one token long: only the door's fields are fuzzed, not the generation's length.
E2E_PATHS = [p for p in CHAT_PATHS if p[0] not in ("max_tokens", "max_completion_tokens", "ignore_eos", "model")]


def _short(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "max_tokens": 1, "max_completion_tokens": 1}


@settings(max_examples=60, deadline=None)
@given(st.builds(mutated, st.just(_short(_valid_chat())), st.sampled_from(E2E_PATHS), replacements))
@example(mutated(_short(_valid_chat()), ("messages", 4, "content"), "\ud800"))
@example(mutated(_short(_valid_chat()), ("stop", 0), "\udfff"))
def test_a_real_server_answers_fuzzed_bodies_without_a_5xx(
    live: tuple[RunningServer, _Errors], body: dict[str, Any]
) -> None:
    server, errors = live
    errors.records.clear()
    r = httpx.post(server.url + "/v1/chat/completions", content=_json_bytes({**body, "model": server.model_id}),
                   headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code < 500, r.text
    assert r.status_code == 200 or r.json()["error"]["message"]
    assert not errors.records, [rec.getMessage() for rec in errors.records]
