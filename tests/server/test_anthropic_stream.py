"""Anthropic's stream and body from scripted engine events, without a model: the events in order,
one content block at a time, text piled up sent as one delta, calls as tool_use blocks, stop
reasons (a stop sequence named), usage apart from the cached prompt, a failure as an error event."""

from __future__ import annotations

import asyncio
import json

from prefill.engine.batch.request import Failed, RequestHandle
from prefill.engine.events import Finished, MetricsSnapshot, Token
from prefill.engine.message import ToolCall
from prefill.server.anthropic.replies import MessageEvents, MessageReply, stop_reason, usage
from prefill.server.stream_body import stream_body
from tests.server.scripted_events import scripted_generation


def _collect(events: list[object], stops: tuple[str, ...] = (),
             calls: list[ToolCall] | None = None) -> tuple[list[tuple[str, dict]], RequestHandle]:  # type: ignore[type-arg]
    async def main() -> tuple[str, RequestHandle]:
        gen = scripted_generation(events, calls or ())
        return "".join([b async for b in stream_body(MessageEvents(MessageReply("m", stops), gen))]), gen.handle

    text, handle = asyncio.run(main())
    out = []
    for block in text.strip().split("\n\n"):
        name, data = block.split("\n")
        out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out, handle


def test_the_events_come_in_anthropics_order_with_the_text_piled_up_in_one_delta() -> None:
    m = MetricsSnapshot(prompt_tokens=12, cached_tokens=8, completion_tokens=3)
    events, handle = _collect([Token("a", 1), Token(" b", 2), Token(" c", 3), Finished("length", "a b c", m)])
    assert [n for n, _ in events] == ["message_start", "ping", "content_block_start", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"]
    assert all(d["type"] == n for n, d in events)
    assert events[0][1]["message"]["usage"] == {"input_tokens": 12, "output_tokens": 0}
    assert events[3][1]["delta"] == {"type": "text_delta", "text": "a b c"}
    assert events[5][1]["delta"] == {"stop_reason": "max_tokens", "stop_sequence": None}
    assert events[5][1]["usage"] == {"input_tokens": 4, "output_tokens": 3, "cache_read_input_tokens": 8,
                                     "cache_creation_input_tokens": 0}
    assert handle.cancelled  # the slot is let go whatever way the stream ends


def test_calls_are_tool_use_blocks_and_the_reason_tool_use() -> None:
    call = ToolCall("call_1", "weather", '{"city": "Oslo"}')
    events, _ = _collect([Token("ok", 1), Finished("stop", "ok", MetricsSnapshot())], calls=[call])
    names = [n for n, _ in events]
    assert names[2:] == ["content_block_start", "content_block_delta", "content_block_stop", "content_block_start",
                         "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    assert events[5][1] == {"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": "call_1", "name": "weather", "input": {}}}
    assert events[6][1]["delta"] == {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'}
    assert events[8][1]["delta"]["stop_reason"] == "tool_use"


def test_an_empty_answer_is_one_empty_text_block_and_a_stop_sequence_is_named() -> None:
    events, _ = _collect([Finished("stop", "", MetricsSnapshot(), stop="END")], stops=("END",))
    assert [n for n, _ in events][2:5] == ["content_block_start", "content_block_delta", "content_block_stop"]
    assert events[-2][1]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "END"}
    assert stop_reason("stop", "<|im_end|>", ("END",)) == ("end_turn", None)  # the format's own marker: a turn's end
    assert stop_reason("context_full") == ("max_tokens", None)


def test_a_failure_after_text_is_an_error_event() -> None:
    events, _ = _collect([Token("a", 1), Failed("boom")])
    assert events[-1][0] == "error" and events[-1][1]["error"]["type"] == "api_error"
    assert "boom" in events[-1][1]["error"]["message"]


def test_the_whole_message() -> None:
    m = MetricsSnapshot(prompt_tokens=10, cached_tokens=0, completion_tokens=2)
    reply = MessageReply("m", ("END",))
    body = reply.full("hi", "hmm", [ToolCall("c", "f", '{"x": 1}')], reply.stop(Finished("stop", "", m, stop="END"),
                                                                                    "stop"), m)
    assert [b["type"] for b in body["content"]] == ["thinking", "text", "tool_use"]
    assert body["content"][2]["input"] == {"x": 1}
    assert (body["stop_reason"], body["stop_sequence"]) == ("stop_sequence", "END")
    assert body["usage"] == usage(m) and body["type"] == "message" and body["id"].startswith("msg_")
