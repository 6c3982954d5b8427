"""Ollama's replies from the core's events: a stream of NDJSON lines (`application/x-ndjson`), or one
object; the last says done, why (`done_reason`: stop or length) and the figures.

A chat's line carries `message` (`content`, `thinking` apart, `tool_calls` with their arguments as
objects), a generate's `response` and `thinking`. The figures are the request's own, in nanoseconds:
`total_duration` from its arrival to its end, `load_duration` its wait for the model's load,
`prompt_eval_count` the prompt's tokens (the cached ones included, as Ollama counts them since it reads
llama-server's figures), `prompt_eval_cached_count` those the prefix cache held and
`prompt_eval_duration` the prefill of the rest, `eval_count` the answer's tokens and `eval_duration`
their decoding (the measured rate). A failure mid-stream is a line `{"error": "..."}`, which Ollama's
clients raise.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request

from prefill.engine.batch.request import Failed
from prefill.engine.events import Finished, MetricsSnapshot
from prefill.engine.message import ToolCall
from prefill.server.core import Generation, Step
from prefill.server.fields import finite_json

NDJSON = "application/x-ndjson"
# the engine's finish reasons -> Ollama's; a full slot context ends the answer as num_predict would
_DONE = {"length": "length", "context_full": "length"}


def now_text() -> str:
    """The time now as Ollama writes it (RFC 3339, UTC)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def tool_call(c: ToolCall, index: int) -> dict[str, Any]:
    """A call as Ollama writes it: its arguments as an object ({} where the model wrote no JSON object, or
    one holding NaN or 1e999, which no JSON line can carry)."""
    try:
        args = finite_json(c.arguments)
    except ValueError:
        args = {}
    return {"id": c.id, "function": {"index": index, "name": c.name,
                                     "arguments": args if isinstance(args, dict) else {}}}


@dataclass
class OllamaReply:
    """One answer's identity and its lines: `chat` (a message) or a generate's `response`."""

    chat: bool
    model: str  # the name the request gave
    started: float = field(default_factory=time.perf_counter)  # the request's arrival
    load_ms: float = 0.0  # its wait for the model's load
    _calls: int = 0  # calls sent so far (each call's index)

    def piece(self, content: str = "", thinking: str = "", calls: Sequence[ToolCall] = ()) -> dict[str, Any]:
        """A line of text (and calls), not the last."""
        body: dict[str, Any] = {"model": self.model, "created_at": now_text()}
        if self.chat:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if thinking:
                message["thinking"] = thinking
            if calls:
                message["tool_calls"] = [tool_call(c, i) for i, c in enumerate(calls, self._calls)]
                self._calls += len(calls)
            body["message"] = message
        else:
            body["response"] = content
            if thinking:
                body["thinking"] = thinking
        body["done"] = False
        return body

    def last(self, reason: str, m: MetricsSnapshot, content: str = "", thinking: str = "",
             calls: Sequence[ToolCall] = ()) -> dict[str, Any]:
        """The last line (or the whole answer): done, why, and the figures."""
        body = self.piece(content, thinking, calls)
        body.update(done=True, done_reason=_DONE.get(reason, "stop"), **self.figures(m))
        return body

    def figures(self, m: MetricsSnapshot) -> dict[str, int]:
        """The request's figures in nanoseconds, measured."""
        total = int((time.perf_counter() - self.started) * 1e9)
        if m.completion_tokens > 1 and m.decode_tps > 0:
            decode = m.completion_tokens / m.decode_tps * 1e9  # the mean time per token, for every token
        else:  # one token: from the prompt's end to it
            decode = max(0.0, m.ttft_ms - m.prefill_ms) * 1e6
        return {"total_duration": total, "load_duration": int(self.load_ms * 1e6),
                "prompt_eval_count": m.prompt_tokens, "prompt_eval_cached_count": m.cached_tokens,
                "prompt_eval_duration": int(m.prefill_ms * 1e6),
                "eval_count": m.completion_tokens, "eval_duration": int(decode)}

    def loaded(self, reason: str) -> dict[str, Any]:
        """The answer to a request that only loads (or unloads) its model: done_reason "load" or "unload"."""
        body = self.piece()
        body.update(done=True, done_reason=reason)
        return body


async def full_reply(reply: OllamaReply, gen: Generation, request: Request) -> dict[str, Any]:
    """The whole answer (`"stream": false`; with documents, its `sources`). A client that disconnects while
    waiting cancels the request."""
    done = await gen.whole(request)
    body = reply.last(done.reason, done.end.metrics, done.content, done.reasoning, done.calls)
    body.update(gen.extension())
    return body


class OllamaLines:
    """Ollama's NDJSON stream (a `StepWriter`): a line per batch of text that came together, a line per batch
    of calls, the last line (with documents, it carries the `sources`)."""

    def __init__(self, reply: OllamaReply, gen: Generation):
        self.reply, self.gen = reply, gen

    def head(self) -> str:
        return ""

    def step(self, step: Step) -> str:
        reply = self.reply
        out = [line(reply.piece(step.content, step.reasoning))] if step.reasoning or step.content else []
        if step.calls:
            out.append(line(reply.piece(calls=step.calls)))
        return "".join(out)

    async def last(self, end: Finished | Failed) -> str:
        if isinstance(end, Failed):
            return line({"error": end.message})
        return line({**self.reply.last(self.gen.final_reason(end.reason), end.metrics), **self.gen.extension()})
