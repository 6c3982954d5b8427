"""Tools through a remote engine: the request carries them in OpenAI's shape, and the calls a
server streams back, however it cuts them, come out as ToolCalled events and Finished.tool_calls.

Against `prefill serve` on a scripted model that always calls weather(city="Oslo"), and against
the fault server's call modes (one per way real servers cut a call, and one that never ends).
"""

from __future__ import annotations

import json
import time
import tracemalloc
from typing import Any

import httpx2 as httpx
import pytest

from prefill.engine.events import Finished, PrefillDone, Token, ToolCalled
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import ChatRequest, ResponseFormat, Tool
from prefill.engine.settings import SamplingSettings
from prefill.remote.engine import RemoteEngine
from prefill.remote.errors import BadResponse, ResponseTooLarge
from prefill.remote.tool_calls import (
    MAX_ALL_ARGUMENTS_BYTES,
    MAX_ARGUMENTS_BYTES,
    MAX_CALLS,
    MAX_NAME_CHARS,
    CallAssembler,
    CallFault,
)
from prefill.ui.workers.remote_messages import remote_error_text
from tests.remote.fault_server import CALLS, FaultServer
from tests.server.conftest import Served

WEATHER = Tool("weather", "The weather in a city.",
               '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}')
CLOCK = Tool("clock", "The time in a zone.", '{"type": "object", "properties": {"zone": {"type": "string"}}}')
ASK = [Message("user", "What is the weather in Oslo?")]
GREEDY = SamplingSettings(temperature=0.0, max_tokens=40)
EXPECTED = [ToolCall(*c) for c in CALLS]
HANG_UP_S = 10.0


def _run(engine: RemoteEngine, request: ChatRequest) -> tuple[list[object], Finished]:
    events = list(engine.stream(request))
    assert isinstance(events[0], PrefillDone)
    f = events[-1]
    assert isinstance(f, Finished)
    return events, f


def _called(events: list[object]) -> list[ToolCall]:
    return [e.call for e in events if isinstance(e, ToolCalled)]


# --- what is sent ---------------------------------------------------------------------------
def _sent(fault_server: FaultServer, request: ChatRequest) -> dict[str, Any]:
    list(RemoteEngine(fault_server.url, "fake-a").stream(request))
    body = fault_server.requests[-1][1]
    assert isinstance(body, dict)
    return body


def test_tools_and_tool_turns_are_sent_in_openais_shape(fault_server: FaultServer) -> None:
    call = ToolCall("call_1", "weather", '{"city": "Oslo"}')
    later = ToolCall("call_2", "clock", '{"zone": "Europe/Oslo"}')
    messages = [*ASK, Message("assistant", "", tool_calls=(call,)),
                Message("tool", "3 °C and snow", tool_call_id="call_1", name="weather"),
                Message("assistant", "Snow. And the time?", tool_calls=(later,)),
                Message("tool", "12:00", tool_call_id="call_2")]
    body = _sent(fault_server, ChatRequest(tuple(messages), GREEDY, tools=(WEATHER, CLOCK)))
    assert body["tools"] == [WEATHER.as_openai(), CLOCK.as_openai()]
    assert body["tools"][0]["function"]["parameters"]["required"] == ["city"]
    assert body["tool_choice"] == "auto"
    assert "response_format" not in body
    assert body["messages"] == [
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "content": "3 °C and snow", "tool_call_id": "call_1", "name": "weather"},
        {"role": "assistant", "content": "Snow. And the time?", "tool_calls": [later.as_openai()]},
        {"role": "tool", "content": "12:00", "tool_call_id": "call_2"},
    ]


@pytest.mark.parametrize(("choice", "sent"), [
    ("required", "required"),
    ("clock", {"type": "function", "function": {"name": "clock"}}),
    ("none", None),
])
def test_the_tool_choice_is_sent_as_openai_takes_it(fault_server: FaultServer, choice: str, sent: object) -> None:
    body = _sent(fault_server, ChatRequest(tuple(ASK), GREEDY, tools=(WEATHER, CLOCK), tool_choice=choice))
    if sent is None:  # "none" offers no tools: neither is sent, so any server answers in words
        assert "tools" not in body and "tool_choice" not in body
    else:
        assert body["tool_choice"] == sent and len(body["tools"]) == 2


def test_no_tools_sends_no_tool_fields(fault_server: FaultServer) -> None:
    body = _sent(fault_server, ChatRequest.of(ASK, GREEDY))
    assert not {"tools", "tool_choice", "response_format"} & body.keys()


@pytest.mark.parametrize(("fmt", "sent"), [
    (ResponseFormat("json_object"), {"type": "json_object"}),
    (ResponseFormat("json_schema", '{"type": "object", "properties": {"a": {"type": "integer"}}}', "answer"),
     {"type": "json_schema", "json_schema": {
         "name": "answer", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}, "strict": True}}),
    (ResponseFormat("json_schema", '{"type": "array"}'),
     {"type": "json_schema", "json_schema": {"name": "response", "schema": {"type": "array"}, "strict": True}}),
])
def test_a_response_format_is_sent(fault_server: FaultServer, fmt: ResponseFormat, sent: object) -> None:
    assert _sent(fault_server, ChatRequest(tuple(ASK), GREEDY, response_format=fmt))["response_format"] == sent


# --- what comes back ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["calls_split", "calls_interleaved", "calls_late", "calls_whole", "calls_reply"])
def test_calls_cut_any_way_come_back_whole(fault_server: FaultServer, mode: str) -> None:
    fault_server.mode = mode
    events, f = _run(RemoteEngine(fault_server.url, "fake-a"), ChatRequest(tuple(ASK), tools=(WEATHER, CLOCK)))
    assert _called(events) == EXPECTED  # in index order, each once, ids as the server gave them
    assert f.reason == "tool_calls" and f.metrics.finish_reason == "tool_calls"
    assert list(f.tool_calls) == EXPECTED and not f.malformed_calls
    assert json.loads(f.tool_calls[0].arguments) == {"city": "Tromsø", "note": 'a "quoted" {brace}'}
    assert f.text == ("Checking." if mode == "calls_split" else "")
    assert "".join(e.text for e in events if isinstance(e, Token)) == f.text
    if mode == "calls_reply":  # the reply's usage counts its tokens
        assert f.metrics.completion_tokens == 20 and f.metrics.prompt_tokens == 12
    else:  # each chunk of a call is a token of the answer, for the figures
        assert f.metrics.completion_tokens >= 1 and f.metrics.ttft_ms > 0 and f.metrics.answer_ttft_ms > 0


def test_a_split_call_is_given_out_as_soon_as_the_next_one_begins(fault_server: FaultServer) -> None:
    fault_server.mode = "calls_split"
    events, _ = _run(RemoteEngine(fault_server.url, "fake-a"), ChatRequest(tuple(ASK), tools=(WEATHER, CLOCK)))
    first, second = (e for e in events if isinstance(e, ToolCalled))
    (_, _, a), (_, _, b) = CALLS
    # Chunks so far: the text, the first call's head and each character of its arguments, the second's head.
    assert first.n_tokens == 1 + 1 + len(a) + 1
    assert second.n_tokens == first.n_tokens + len(b)


def test_a_call_whose_arguments_never_end_is_refused(fault_server: FaultServer) -> None:
    fault_server.mode = "calls_endless"
    engine = RemoteEngine(fault_server.url, "fake-a")
    tracemalloc.start()
    try:
        with pytest.raises(ResponseTooLarge) as info:
            list(engine.stream(ChatRequest(tuple(ASK), tools=(WEATHER,))))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    e = info.value
    assert e.message == (f"the server at {engine.base} sent a tool call (weather) with arguments of more than "
                         "1 MiB; the answer was stopped there")
    assert e.limit == MAX_ARGUMENTS_BYTES == 2**20
    assert remote_error_text(e).startswith("The server at ")
    assert fault_server.hung_up.wait(HANG_UP_S)  # the connection was closed, not read on
    assert fault_server.sent < 16 * MAX_ARGUMENTS_BYTES
    assert peak < 8 * MAX_ARGUMENTS_BYTES


# --- the assembler's edge cases -------------------------------------------------------------
def _frag(index: int | None = None, id: str | None = None, name: str | None = None,
          arguments: object = None) -> dict[str, Any]:
    out: dict[str, Any] = {} if index is None else {"index": index}
    if id is not None:
        out["id"] = id
    fn = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    if fn:
        out["function"] = fn
    return out


def _assembled(*chunks: list[dict[str, Any]]) -> tuple[list[ToolCall], CallAssembler]:
    a = CallAssembler(new_id=iter(f"made_{i}" for i in range(99)).__next__)
    out: list[ToolCall] = []
    for c in chunks:
        out += a.feed(c)
    out += a.finish()
    assert out == a.calls
    return out, a


def test_calls_without_ids_get_ids_and_empty_arguments_are_an_empty_object() -> None:
    calls, _ = _assembled([_frag(0, name="ping")], [_frag(1, name="pong", arguments='{"a": 1}')])
    assert calls == [ToolCall("made_0", "ping", "{}"), ToolCall("made_1", "pong", '{"a": 1}')]


def test_a_name_in_pieces_or_repeated_and_arguments_as_an_object() -> None:
    calls, _ = _assembled([_frag(0, "c1", "wea")], [_frag(0, "c1", "ther")], [_frag(0, "c1", "weather")],
                          [_frag(0, "c1", "weather", {"city": "Oslo"})])
    assert calls == [ToolCall("c1", "weather", '{"city": "Oslo"}')]


def test_fragments_without_an_index_follow_their_id() -> None:
    calls, _ = _assembled([_frag(None, "c1", "weather", '{"city":')], [_frag(None, "c2", "clock", "{}")],
                          [_frag(None, "c1", arguments=' "Oslo"}')])
    assert calls == [ToolCall("c1", "weather", '{"city": "Oslo"}'), ToolCall("c2", "clock", "{}")]


def test_calls_all_numbered_0_are_told_apart_by_their_ids() -> None:
    calls, _ = _assembled([_frag(0, "c1", "weather", "")], [_frag(0, arguments='{"city": "Oslo"}')],
                          [_frag(0, "c2", "clock", "")], [_frag(0, arguments="{}")], [_frag(0, "c2", "clock")])
    assert calls == [ToolCall("c1", "weather", '{"city": "Oslo"}'), ToolCall("c2", "clock", "{}")]


def test_interleaved_calls_cut_one_character_at_a_time_cost_their_length() -> None:
    a = '{"s": "' + '}{\\\"' * 20_000 + '"}'  # closers and escapes inside a string, 100 KB
    b = '{"t": [' + "[]," * 30_000 + "1]}"
    chunks = [[_frag(0, "c1", "f", "")], [_frag(1, "c2", "g", "")]]
    for i in range(max(len(a), len(b))):
        chunks += [[_frag(k, arguments=text[i])] for k, text in ((0, a), (1, b)) if i < len(text)]
    start = time.perf_counter()
    calls, _ = _assembled(*chunks)
    assert calls == [ToolCall("c1", "f", a), ToolCall("c2", "g", b)]
    assert time.perf_counter() - start < 10  # a JSON parse at each switch would take hours


def test_a_repeat_of_a_complete_call_is_ignored_but_more_arguments_are_refused() -> None:
    a = CallAssembler()
    a.feed([_frag(0, "c1", "weather", "{}")])
    assert a.feed([_frag(1, "c2", "clock", "{}")]) == [ToolCall("c1", "weather", "{}")]
    assert a.feed([_frag(0, "c1", "weather", "  ")]) == []
    with pytest.raises(CallFault, match="more arguments for tool call 0 after it was complete"):
        a.feed([_frag(0, arguments="}")])


@pytest.mark.parametrize(("fragment", "why"), [
    (_frag(0, "c1", arguments="{}"), "tool call 0 names no function"),
    (_frag(0, "c1", "weather", '{"city": Oslo}'), "the arguments of weather are not JSON: {\"city\": Oslo}"),
    (_frag(0, "c1", "weather", '["Oslo"]'), 'the arguments of weather are not a JSON object: ["Oslo"]'),
    (_frag(0, "c1", "weather", '{"city": "Oslo'), 'the arguments of weather are not JSON: {"city": "Oslo'),
])
def test_a_malformed_call_is_reported_not_given(fragment: dict[str, Any], why: str) -> None:
    calls, a = _assembled([fragment])
    assert calls == [] and a.malformed == [why]


@pytest.mark.parametrize(("chunks", "limit"), [
    ([[_frag(0, "c1", "w" * (MAX_NAME_CHARS + 1))]], MAX_NAME_CHARS),
    ([[_frag(0, "c1", "weather", "x" * 2**19)], [_frag(0, arguments="x" * (2**19 + 1))]], MAX_ARGUMENTS_BYTES),
    ([[_frag(i, f"c{i}", "ping", "{}")] for i in range(MAX_CALLS + 1)], MAX_CALLS),
    ([[_frag(i, f"c{i}", "ping", "x" * MAX_ARGUMENTS_BYTES)] for i in range(8)] + [[_frag(8, "c8", "ping", "x")]],
     MAX_ALL_ARGUMENTS_BYTES),
])
def test_bounds(chunks: list[list[dict[str, Any]]], limit: int) -> None:
    a = CallAssembler()
    with pytest.raises(CallFault) as info:
        for c in chunks:
            a.feed(c)
    assert info.value.limit == limit


def test_an_escape_cut_at_a_piece_boundary_is_read_across_it() -> None:
    args = '{"s": "a\\\\"}'  # a backslash escaped: the quote after it closes the string
    calls, _ = _assembled([_frag(0, "c1", "f", "")], *[[_frag(0, arguments=ch)] for ch in args],
                          [_frag(1, "c2", "g", "{}")])
    assert calls == [ToolCall("c1", "f", args), ToolCall("c2", "g", "{}")]


def _stream_of(*chunks: dict[str, Any], finish: str = "tool_calls", kind: str = "text/event-stream") -> RemoteEngine:
    """An engine whose server streams these deltas, then `finish`, then [DONE] (as `kind`)."""
    def event(delta: dict[str, Any], reason: str | None = None) -> str:
        return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}) + "\n\n"

    body = "".join(event(c) for c in chunks) + event({}, finish) + "data: [DONE]\n\n"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": kind}, content=body.encode())

    return RemoteEngine("http://remote.test", "fake", transport=httpx.MockTransport(handler))


def test_an_answer_whose_only_call_is_malformed_stops_in_words() -> None:
    engine = _stream_of({"content": "Let me see."}, {"tool_calls": [_frag(0, "c1", "weather", "{oops")]})
    events, f = _run(engine, ChatRequest(tuple(ASK), tools=(WEATHER,)))
    assert _called(events) == [] and f.tool_calls == ()
    assert f.reason == "stop" and f.malformed_calls == ("the arguments of weather are not JSON: {oops",)
    assert f.text == "Let me see."


def test_more_of_a_complete_call_is_refused_in_words_with_the_answer_kept() -> None:
    engine = _stream_of({"content": "Two calls."}, {"tool_calls": [_frag(0, "c1", "weather", "{}")]},
                        {"tool_calls": [_frag(1, "c2", "clock", "{}")]}, {"tool_calls": [_frag(0, arguments="{")]})
    got: list[object] = []
    with pytest.raises(BadResponse) as info:
        for ev in engine.stream(ChatRequest(tuple(ASK), tools=(WEATHER, CLOCK))):
            got.append(ev)
    assert info.value.message == ("the server at http://remote.test/v1 sent more arguments for tool call 0 "
                                  "after it was complete")
    assert info.value.partial == "Two calls." and _called(got) == [ToolCall("c1", "weather", "{}")]


def test_a_stream_labelled_as_json_is_still_read_as_a_stream() -> None:
    engine = _stream_of({"content": "Hi"}, {"tool_calls": [_frag(0, "c1", "ping", "{}")]}, finish="stop",
                        kind="application/json; charset=utf-8")
    events, f = _run(engine, ChatRequest(tuple(ASK), tools=(Tool("ping"),)))
    assert f.text == "Hi" and f.reason == "tool_calls" and _called(events) == [ToolCall("c1", "ping", "{}")]


def test_calls_that_end_for_length_keep_that_reason() -> None:
    engine = _stream_of({"tool_calls": [_frag(0, "c1", "weather", '{"city": "Oslo"}')]}, finish="length")
    events, f = _run(engine, ChatRequest(tuple(ASK), tools=(WEATHER,)))
    assert f.reason == "length" and _called(events) == [ToolCall("c1", "weather", '{"city": "Oslo"}')]


# --- against prefill serve ------------------------------------------------------------------
@pytest.fixture(scope="module")
def caller(caller_server: Served) -> Served:
    return caller_server


def test_prefill_serve_calls_a_tool_through_the_remote_engine(caller: Served) -> None:
    engine = RemoteEngine(caller.url)
    events, f = _run(engine, ChatRequest(tuple(ASK), GREEDY, tools=(WEATHER,)))
    (call,) = _called(events)
    assert call.name == "weather" and json.loads(call.arguments) == {"city": "Oslo"} and call.id.startswith("call_")
    assert f.reason == "tool_calls" and f.tool_calls == (call,) and f.text == "" and not f.malformed_calls
    assert events.index(next(e for e in events if isinstance(e, ToolCalled))) < len(events) - 1
    assert f.metrics.prompt_tokens > 0 and f.metrics.completion_tokens > 0

    # The round trip: the call and its result go back, and the server renders both into the prompt.
    back = [*ASK, Message("assistant", "", tool_calls=(call,)),
            Message("tool", "3 °C and snow", tool_call_id=call.id, name="weather")]
    _, again = _run(engine, ChatRequest(tuple(back), GREEDY, tools=(WEATHER,)))
    assert again.metrics.prompt_tokens > f.metrics.prompt_tokens
    assert again.reason == "tool_calls"  # this model calls, whatever it is told

    # tool_choice "none" offers nothing: the server answers in words, with a shorter prompt.
    _, plain = _run(engine, ChatRequest(tuple(ASK), GREEDY, tools=(WEATHER,), tool_choice="none"))
    assert plain.reason == "stop" and not plain.tool_calls
    assert plain.metrics.prompt_tokens < f.metrics.prompt_tokens
    engine.close()
