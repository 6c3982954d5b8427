"""The Responses API's stream and body from scripted engine events, without a model: the events in
order and numbered, one item open at a time (thinking, then the message), calls as function_call
items, a cut answer `incomplete` with the same status whole and streamed, usage with the cached
prompt and the thinking's tokens, a failure as `response.failed`, and the finished response kept."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.requests import Request

from prefill.engine.batch.request import BatchRequest, Failed, RequestHandle
from prefill.engine.events import Finished, MetricsSnapshot, Token
from prefill.engine.message import ToolCall
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.reasoning import ReasoningParser, ReasoningSyntax
from prefill.engine.settings import ServeSampling
from prefill.server.core import Generation
from prefill.server.generate import EventStream
from prefill.server.loop_waker import LoopWaker
from prefill.server.responses.replies import ResponseEvents, ResponseReply, full_reply
from prefill.server.stream_body import stream_body

THINK = ReasoningSyntax((("<think>", "</think>"),))


def _reply() -> ResponseReply:
    return ResponseReply("m", {"tools": [], "parallel_tool_calls": True}, True, lambda text: len(text.split()))


def _generation(events: list[object], calls: list[ToolCall] | None, thinks: bool, tokens: bool = True
                ) -> Generation:
    stream = EventStream(LoopWaker(asyncio.get_running_loop()), tokens=tokens)
    handle = RequestHandle(BatchRequest((1,), ServeSampling(), stream.sink), lambda: None)
    splitter = AnswerSplit(ReasoningParser(THINK) if thinks else None)
    if calls:
        splitter.calls.extend(calls)  # as the reader takes them out of the answer
    for ev in events:
        stream.sink(ev)  # type: ignore[arg-type]
    stream.waker.step_done(idle=True)
    return Generation(handle, stream, splitter, prompt_tokens=12)


def _collect(events: list[object], calls: list[ToolCall] | None = None, thinks: bool = False
             ) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]], RequestHandle]:
    kept: list[dict[str, Any]] = []

    async def keep(body: dict[str, Any]) -> None:
        kept.append(body)

    async def main() -> tuple[str, RequestHandle]:
        gen = _generation(events, calls, thinks)
        return "".join([b async for b in stream_body(ResponseEvents(_reply(), gen, keep))]), gen.handle

    text, handle = asyncio.run(main())
    out = []
    for block in text.strip().split("\n\n"):
        name, data = block.split("\n")
        out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out, kept, handle


def _whole(events: list[object], calls: list[ToolCall] | None = None, thinks: bool = False) -> dict[str, Any]:
    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)  # the client stays
        return {"type": "http.disconnect"}

    async def main() -> dict[str, Any]:
        gen = _generation([e for e in events if type(e) is not Token], calls, thinks, tokens=False)
        request = Request({"type": "http", "method": "POST", "headers": []}, receive)
        return await full_reply(_reply(), gen, request)

    return asyncio.run(main())


def test_the_events_come_in_order_numbered_with_the_text_piled_up() -> None:
    m = MetricsSnapshot(prompt_tokens=12, cached_tokens=8, completion_tokens=3)
    events, kept, handle = _collect([Token("a", 1), Token(" b", 2), Token(" c", 3), Finished("stop", "a b c", m)])
    names = [n for n, _ in events]
    assert names == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.content_part.added", "response.output_text.delta", "response.output_text.done",
                     "response.content_part.done", "response.output_item.done", "response.completed"]
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    assert all(d["type"] == n for n, d in events)
    assert events[0][1]["response"]["status"] == "in_progress" and events[0][1]["response"]["output"] == []
    assert events[4][1]["delta"] == "a b c" and events[5][1]["text"] == "a b c"
    done = events[-1][1]["response"]
    assert done["status"] == "completed" and done["output"][0]["content"][0]["text"] == "a b c"
    assert done["usage"] == {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 0},
                             "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    assert kept == [done] and handle.cancelled  # kept as sent; the slot let go whatever way the stream ends
    assert len({d["response"]["id"] for n, d in events if "response" in d}) == 1


def test_thinking_is_a_reasoning_item_before_the_message_and_counted() -> None:
    m = MetricsSnapshot(prompt_tokens=5, completion_tokens=9)
    script = [Token("<think>", 1), Token("two and two", 2), Token("</think>", 3), Token("It is 4", 4),
              Finished("stop", "<think>two and two</think>It is 4", m)]
    events, kept, _ = _collect(script, thinks=True)
    names = [n for n, _ in events]
    assert names[2:5] == ["response.output_item.added", "response.reasoning_text.delta",
                          "response.reasoning_text.done"]
    assert "response.output_text.delta" in names and names.index("response.output_text.delta") > 5
    body = kept[0]
    assert [i["type"] for i in body["output"]] == ["reasoning", "message"]
    assert body["output"][0]["content"] == [{"type": "reasoning_text", "text": "two and two"}]
    assert body["usage"]["output_tokens_details"]["reasoning_tokens"] == 3
    whole = _whole(script, thinks=True)
    assert [i["type"] for i in whole["output"]] == ["reasoning", "message"]
    assert whole["output"][1]["content"][0]["text"] == body["output"][1]["content"][0]["text"] == "It is 4"
    assert whole["usage"] == body["usage"]


def test_calls_are_function_call_items_after_the_message() -> None:
    call = ToolCall("call_1", "weather", '{"city": "Oslo"}')
    events, kept, _ = _collect([Token("ok", 1), Finished("stop", "ok", MetricsSnapshot())], calls=[call])
    names = [n for n, _ in events]
    assert names[-5:] == ["response.output_item.added", "response.function_call_arguments.delta",
                          "response.function_call_arguments.done", "response.output_item.done", "response.completed"]
    added = events[-5][1]["item"]
    assert (added["type"], added["status"], added["arguments"]) == ("function_call", "in_progress", "")
    assert events[-3][1]["arguments"] == '{"city": "Oslo"}' and events[-3][1]["output_index"] == 1
    item = kept[0]["output"][1]
    assert (item["call_id"], item["name"], item["arguments"], item["status"]) == (
        "call_1", "weather", '{"city": "Oslo"}', "completed")
    assert item["id"].startswith("fc_") and kept[0]["output"][0]["id"].startswith("msg_")


def test_a_cut_answer_is_incomplete_whole_and_streamed() -> None:
    m = MetricsSnapshot(prompt_tokens=4, completion_tokens=2)
    script = [Token("a", 1), Token(" b", 2), Finished("length", "a b", m)]
    events, kept, _ = _collect(script)
    assert events[-1][0] == "response.incomplete"
    streamed = events[-1][1]["response"]
    whole = _whole(script)
    for body in (streamed, whole):
        assert body["status"] == "incomplete"
        assert body["incomplete_details"] == {"reason": "max_output_tokens"}
        assert body["output"][-1]["status"] == "incomplete"
    assert whole["output"][0]["content"] == streamed["output"][0]["content"]


def test_an_empty_answer_is_one_empty_message_and_a_call_alone_has_none() -> None:
    events, kept, _ = _collect([Finished("stop", "", MetricsSnapshot())])
    assert [i["type"] for i in kept[0]["output"]] == ["message"]
    assert kept[0]["output"][0]["content"][0]["text"] == ""
    call = ToolCall("c", "f", "{}")
    _, kept, _ = _collect([Finished("stop", "", MetricsSnapshot())], calls=[call])
    assert [i["type"] for i in kept[0]["output"]] == ["function_call"]
    assert [i["type"] for i in _whole([Finished("stop", "", MetricsSnapshot())], calls=[call])["output"]] == [
        "function_call"]


def test_a_failure_after_text_is_response_failed_and_nothing_is_kept() -> None:
    events, kept, handle = _collect([Token("a", 1), Failed("boom")])
    assert events[-1][0] == "response.failed"
    failed = events[-1][1]["response"]
    assert failed["status"] == "failed" and "boom" in failed["error"]["message"]
    assert kept == [] and handle.cancelled
