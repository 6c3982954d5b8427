"""Tool calls by the rules clients rely on, with the official `openai` client on SmolLM2:
`parallel_tool_calls: false` allows one call, a call cut off by max_tokens leaves none of its markup
in the text, and a request ends with the same finish reason whole and streamed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import Served, start_server, stop_server

WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Oslo, Paris, Rome and Berlin?"}]
MARKUP = ("<tool_call", "tool_call>", '{"name"', '"arguments"')


@pytest.fixture(scope="module")
def smol(smollm2: Path) -> Iterator[Served]:
    s = start_server(smollm2, "--parallel", "2", "--ctx", "2048")
    yield s
    stop_server(s)


def both(s: Served, **kw: object) -> tuple[object, str, list[object], str | None]:
    """The request whole (its choice), and streamed: its text, its call deltas and its last finish reason."""
    client = s.client()
    whole = client.chat.completions.create(model=s.model_id, messages=ASK, tools=[WEATHER], temperature=0, **kw)
    text, parts, reason = "", [], None
    for chunk in client.chat.completions.create(model=s.model_id, messages=ASK, tools=[WEATHER], temperature=0,
                                                stream=True, **kw):
        if chunk.choices:
            delta = chunk.choices[0].delta
            text += delta.content or ""
            parts += delta.tool_calls or []
            reason = chunk.choices[0].finish_reason or reason
    return whole.choices[0], text, parts, reason


def test_parallel_tool_calls_false_allows_one_call_whole_and_streamed(smol: Served) -> None:
    choice, text, parts, reason = both(smol, tool_choice="required", parallel_tool_calls=False, max_tokens=200)
    assert len(choice.message.tool_calls) == 1 and choice.finish_reason == "tool_calls"
    assert {p.index for p in parts} == {0} and reason == "tool_calls"
    assert not choice.message.content and not text.strip()


def test_several_calls_where_allowed(smol: Served) -> None:
    choice, _text, parts, reason = both(smol, tool_choice="required", max_tokens=200)
    assert len(choice.message.tool_calls) >= 2 and len({p.index for p in parts}) == len(choice.message.tool_calls)


def test_a_call_cut_by_max_tokens_leaves_no_markup_and_ends_the_same_both_ways(smol: Served) -> None:
    for limit in (12, 30, 45):  # cut inside the first call, after it, inside a later one
        choice, text, _parts, reason = both(smol, tool_choice="required", max_tokens=limit)
        content = choice.message.content or ""
        assert not any(m in content for m in MARKUP) and not any(m in text for m in MARKUP), (limit, content, text)
        assert choice.finish_reason == reason == "length", limit
