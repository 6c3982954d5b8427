"""Ollama's NDJSON stream and whole reply from scripted engine events, without a model: a line per batch of
text, thinking apart, calls with their arguments as objects, the last line done with its reason and the
figures in nanoseconds, a failure as an {"error"} line, a generate's `response`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from prefill.engine.batch.request import Failed, RequestHandle
from prefill.engine.events import Finished, MetricsSnapshot, Token
from prefill.engine.message import ToolCall
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.reasoning import ReasoningParser, ReasoningSyntax
from prefill.server.ollama.replies import OllamaLines, OllamaReply
from prefill.server.stream_body import stream_body
from tests.server.scripted_events import scripted_generation

M = MetricsSnapshot(prompt_tokens=12, cached_tokens=8, completion_tokens=3, prefill_ms=4.0, decode_tps=100.0,
                    ttft_ms=9.0)


def _collect(events: list[object], chat: bool = True, calls: list[ToolCall] | None = None,
             thinking: bool = False) -> tuple[list[dict[str, Any]], RequestHandle]:
    async def main() -> tuple[str, RequestHandle]:
        splitter = AnswerSplit(ReasoningParser(ReasoningSyntax((("<think>", "</think>"),)))) if thinking else None
        gen = scripted_generation(events, calls or (), splitter)
        reply = OllamaReply(chat, "smollm2:latest", load_ms=1.5)
        return "".join([b async for b in stream_body(OllamaLines(reply, gen))]), gen.handle

    text, handle = asyncio.run(main())
    assert text.endswith("\n")
    return [json.loads(x) for x in text.splitlines()], handle


def test_text_that_came_together_is_one_line_and_the_last_has_the_figures() -> None:
    lines, handle = _collect([Token("a", 1), Token(" b", 2), Token(" c", 3), Finished("length", "a b c", M)])
    assert [x["done"] for x in lines] == [False, True]
    assert lines[0]["message"] == {"role": "assistant", "content": "a b c"}
    assert lines[0]["model"] == "smollm2:latest" and lines[0]["created_at"].endswith("Z")
    last = lines[-1]
    assert last["message"] == {"role": "assistant", "content": ""} and last["done_reason"] == "length"
    assert last["prompt_eval_count"] == 12 and last["eval_count"] == 3
    assert last["prompt_eval_cached_count"] == 8  # of the 12, as Ollama's own field says
    assert last["prompt_eval_duration"] == 4_000_000 and last["load_duration"] == 1_500_000
    assert last["eval_duration"] == 30_000_000  # 3 tokens at 100 a second
    assert last["total_duration"] > 0
    assert handle.cancelled  # the slot is let go whatever way the stream ends


def test_thinking_is_apart_and_a_generate_writes_response() -> None:
    lines, _ = _collect([Token("<think>hm", 1), Token("</think>ok", 2), Finished("stop", "ok", M)], chat=False,
                        thinking=True)
    said = [(x.get("thinking", ""), x["response"]) for x in lines if not x["done"]]
    assert "".join(t for t, _ in said) == "hm" and "".join(r for _, r in said) == "ok"
    assert lines[-1]["done_reason"] == "stop" and "message" not in lines[-1]


def test_calls_come_as_objects_with_their_index_and_the_reason_stop() -> None:
    calls = [ToolCall("call_1", "weather", '{"city": "Oslo"}'), ToolCall("call_2", "weather", '{"city": "Rome"}')]
    lines, _ = _collect([Token("", 1), Finished("tool_calls", "", M)], calls=calls)
    sent = [c for x in lines for c in x["message"].get("tool_calls", [])]
    assert sent == [{"id": "call_1", "function": {"index": 0, "name": "weather", "arguments": {"city": "Oslo"}}},
                    {"id": "call_2", "function": {"index": 1, "name": "weather", "arguments": {"city": "Rome"}}}]
    assert lines[-1]["done"] and lines[-1]["done_reason"] == "stop"


def test_a_failure_after_text_is_an_error_line() -> None:
    lines, handle = _collect([Token("a", 1), Failed("the model failed")])
    assert lines == [lines[0], {"error": "the model failed"}] and lines[0]["message"]["content"] == "a"
    assert handle.cancelled


def test_the_whole_reply_and_a_load() -> None:
    reply = OllamaReply(True, "m")
    body = reply.last("context_full", M, "hi", "thought", [ToolCall("c", "f", "[1]")])
    assert body["message"] == {"role": "assistant", "content": "hi", "thinking": "thought",
                               "tool_calls": [{"id": "c", "function": {"index": 0, "name": "f", "arguments": {}}}]}
    assert body["done"] and body["done_reason"] == "length"
    assert OllamaReply(False, "m").loaded("unload") | {"created_at": ""} == {
        "model": "m", "created_at": "", "response": "", "done": True, "done_reason": "unload"}
