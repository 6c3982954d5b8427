"""The one OpenAI chat codec (`wire/openai_chat.py`): what it writes, for a remote server or as
Prefill's server's answer, reads back as what it was given, through real JSON, and what it refuses is
a `WireFault` naming the field, with no server in sight."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefill.engine.message import ImagePart, Message, ToolCall
from prefill.engine.request import ResponseFormat, Tool
from prefill.remote.tool_calls import CallAssembler
from prefill.wire.checks import WireFault
from prefill.wire.openai_chat import (
    ToolsAsked,
    call_fragments,
    decode_message,
    decode_messages,
    decode_tool_fields,
    encode_message,
    encode_tool_fields,
)


def over_the_wire(obj: Any) -> Any:
    return json.loads(json.dumps(obj, ensure_ascii=False))


names = st.from_regex(r"[A-Za-z0-9_.:-]{1,64}", fullmatch=True)
leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner,
                                                                                            max_size=3), max_leaves=8)
json_objects = st.dictionaries(st.text(), json_values, max_size=4)
object_text = json_objects.map(lambda d: json.dumps(d, ensure_ascii=False))

calls = st.builds(ToolCall, st.text(), names, object_text)
images = st.builds(ImagePart, st.binary(max_size=64), st.sampled_from(["image/png", "image/jpeg", "image/webp"]))
messages = st.one_of(
    st.builds(Message, st.just("system"), st.text()),
    st.builds(Message, st.just("user"), st.text(), images=st.lists(images, max_size=3).map(tuple)),
    st.builds(Message, st.just("assistant"), st.text(), tool_calls=st.lists(calls, max_size=3).map(tuple)),
    st.builds(Message, st.just("tool"), st.text(), tool_call_id=st.text(min_size=1), name=st.text()),
)


@settings(max_examples=150)
@given(st.lists(messages, min_size=1, max_size=5))
def test_every_message_the_engine_holds_reads_back_as_itself(sent: list[Message]) -> None:
    """Text, calls with their JSON arguments, results naming their call, and images: each image comes
    back as a part of its message (after the ones before it, before the text), naming the same data: URL."""
    wire = over_the_wire([encode_message(m) for m in sent])
    got, refs = decode_messages(wire)
    assert got == tuple(replace(m, images=()) for m in sent)
    expected = [(i, j, img) for i, m in enumerate(sent) for j, img in enumerate(m.images)]
    assert [(r.message, r.part) for r in refs] == [(i, j) for i, j, _ in expected]
    for ref, (_, _, img) in zip(refs, expected):
        head, _, payload = ref.url.partition(",")
        assert head == f"data:{img.mime};base64" and base64.b64decode(payload) == img.data
        assert ref.param == f"messages[{ref.message}].content[{ref.part}]"


tools = st.builds(Tool, names, st.text(), json_objects.map(lambda d: json.dumps(d, ensure_ascii=False)))
formats = st.none() | st.just(ResponseFormat("json_object")) | st.builds(
    ResponseFormat, st.just("json_schema"), object_text, st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True))


@st.composite
def tool_fields(draw: st.DrawFn) -> ToolsAsked:
    offered = tuple(draw(st.lists(tools, max_size=4, unique_by=lambda t: t.name)))
    if not offered:  # with no tools the choice is "none" and calls are one at a time or not: nothing to send
        return ToolsAsked((), "none", True, draw(formats))
    choice = draw(st.sampled_from(["auto", "none", "required", *(t.name for t in offered)]))
    return ToolsAsked(offered, choice, draw(st.booleans()), draw(formats))


@settings(max_examples=150)
@given(tool_fields())
def test_tools_their_choice_and_the_answer_format_read_back_as_themselves(asked: ToolsAsked) -> None:
    assert decode_tool_fields(over_the_wire(encode_tool_fields(asked))) == asked


def test_what_is_sent_is_openais_shape() -> None:
    """The shapes OpenAI's API documents, which a remote server and Prefill's clients read."""
    weather = Tool("weather", "The weather.", '{"type": "object"}')
    body = encode_tool_fields(ToolsAsked((weather,), "weather", False, ResponseFormat("json_schema", "{}")))
    assert body == {"tools": [{"type": "function", "function": {"name": "weather", "description": "The weather.",
                                                                "parameters": {"type": "object"}}}],
                    "tool_choice": {"type": "function", "function": {"name": "weather"}},
                    "parallel_tool_calls": False,
                    "response_format": {"type": "json_schema",
                                        "json_schema": {"name": "response", "schema": {}, "strict": True}}}
    call = ToolCall("call_1", "weather", '{"city": "Oslo"}')
    assert encode_message(Message("assistant", "", tool_calls=(call,))) == {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]}
    assert encode_message(Message("tool", "3 °C", tool_call_id="call_1")) == {
        "role": "tool", "content": "3 °C", "tool_call_id": "call_1"}


@given(st.lists(calls, min_size=1, max_size=4, unique_by=lambda c: c.id).filter(lambda cs: all(c.id for c in cs)))
def test_streamed_call_fragments_are_put_back_together_by_the_remote_reader(sent: list[ToolCall]) -> None:
    """What Prefill's server streams (`call_fragments`) is what a remote engine reads back (`CallAssembler`)."""
    reader = CallAssembler()
    got = []
    for i, call in enumerate(sent):
        for fragment in call_fragments(call, i):
            got += reader.feed(over_the_wire([fragment]))
    assert got + reader.finish() == sent and reader.malformed == []


@pytest.mark.parametrize(("message", "param", "words"), [
    ("not an object", "messages[0]", "messages[0] must be an object."),
    ({"role": "robot", "content": "hi"}, "messages[0]", "must be one of system, developer, user, assistant, tool"),
    ({"role": "tool", "content": "result"}, "messages[0]", "a tool message needs its 'tool_call_id'"),
    ({"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}, "messages[0]",
     "only text parts (and a user's image_url parts)"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {}}]}, "messages[0].content[0]",
     "an image_url part needs 'image_url'"),
    ({"role": "user", "content": "\ud800"}, "messages[0].content", "lone surrogate"),
    ({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": "\udfff"}}]},
     "messages[0].tool_calls[0]", "lone surrogate"),
])
def test_a_malformed_message_is_a_fault_naming_its_field(message: object, param: str, words: str) -> None:
    with pytest.raises(WireFault, match=re.escape(words)) as fault:
        decode_message(message, 0, [])
    assert fault.value.param == param and isinstance(fault.value, ValueError)


def test_decoding_takes_what_clients_send_beyond_what_it_writes() -> None:
    """A developer turn, text parts, a null assistant content, arguments as an object, the legacy functions."""
    got, refs = decode_messages([
        {"role": "developer", "content": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "What is it?"},
                                     {"type": "image_url", "image_url": "https://example.org/a.png"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
    ])
    assert got == (Message("system", "Be brief."), Message("user", "What is it?"),
                   Message("assistant", "", tool_calls=(ToolCall("call_0", "f", '{"a": 1}'),)))
    assert [(r.message, r.part, r.url) for r in refs] == [(1, 1, "https://example.org/a.png")]
    legacy = decode_tool_fields({"functions": [{"name": "f"}], "function_call": {"name": "f"}})
    assert legacy == ToolsAsked((Tool("f"),), "f")
