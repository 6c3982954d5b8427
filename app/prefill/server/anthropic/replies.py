"""Anthropic's replies from the core's events: a message whole, or its SSE stream (message_start,
ping, content_block_start / _delta / _stop with text_delta, thinking_delta and input_json_delta,
message_delta with the stop reason and usage, message_stop; an error event when it fails)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from prefill.engine.batch.request import Failed
from prefill.engine.events import Finished, MetricsSnapshot
from prefill.engine.message import ToolCall
from prefill.server.anthropic.errors import anthropic_error
from prefill.server.core import Generation, Step
from prefill.server.errors import server_error
from prefill.server.generate import sse_event as event

# the engine's finish reasons -> Anthropic's stop reasons; a full slot context ends the answer as max_tokens would
_STOP = {"stop": "end_turn", "length": "max_tokens", "context_full": "max_tokens", "cancelled": "end_turn",
         "tool_calls": "tool_use"}


def stop_reason(reason: str, stop: str = "", asked: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """(Anthropic's stop reason, the stop sequence that ended the answer): `stop` is the stop string
    the engine met, `asked` the request's `stop_sequences` (the format's own turn markers end a turn)."""
    if reason == "stop" and stop and stop in asked:
        return "stop_sequence", stop
    return _STOP.get(reason, "end_turn"), None


def usage(m: MetricsSnapshot) -> dict[str, int]:
    """Anthropic's usage: `input_tokens` are those evaluated for this request, apart from those the
    prefix cache held (`cache_read_input_tokens`); their sum is the prompt's length."""
    return {"input_tokens": m.prompt_tokens - m.cached_tokens, "output_tokens": m.completion_tokens,
            "cache_read_input_tokens": m.cached_tokens, "cache_creation_input_tokens": 0}


def tool_use(c: ToolCall) -> dict[str, Any]:
    args = c.arguments_object()
    return {"type": "tool_use", "id": c.id, "name": c.name, "input": args if isinstance(args, dict) else {}}


@dataclass
class MessageReply:
    """One message's identity and its whole body."""

    model: str
    stop_sequences: tuple[str, ...] = ()  # the request's, for stop_reason "stop_sequence"
    id: str = field(default_factory=lambda: f"msg_{uuid.uuid4().hex}")

    def stop(self, ev: Finished, reason: str) -> dict[str, str | None]:
        said, sequence = stop_reason(reason, ev.stop, self.stop_sequences)
        return {"stop_reason": said, "stop_sequence": sequence}

    def head(self) -> dict[str, Any]:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model}

    def full(self, content: str, reasoning: str, calls: list[ToolCall], stop: dict[str, str | None],
             m: MetricsSnapshot) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = []
        if reasoning:
            blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
        if content or not calls:
            blocks.append({"type": "text", "text": content})
        blocks += [tool_use(c) for c in calls]
        return {**self.head(), "content": blocks, **stop, "usage": usage(m)}


async def full_reply(reply: MessageReply, gen: Generation, request: Request) -> dict[str, Any]:
    """The whole message (with documents, its `sources`). A client that disconnects while waiting cancels
    the request."""
    done = await gen.whole(request)
    body = reply.full(done.content, done.reasoning, done.calls, reply.stop(done.end, done.reason), done.end.metrics)
    body.update(gen.extension())
    return body


class _Blocks:
    """The stream's content blocks: at most one open; a new kind closes the one before."""

    def __init__(self) -> None:
        self.index = -1
        self.open: str | None = None

    def write(self, kind: str, delta: dict[str, Any], out: list[str]) -> None:
        if self.open != kind:
            self.close(out)
            self.index += 1
            self.open = kind
            start = ({"type": "text", "text": ""} if kind == "text"
                     else {"type": "thinking", "thinking": "", "signature": ""})
            out.append(event("content_block_start", {"type": "content_block_start", "index": self.index,
                                                     "content_block": start}))
        out.append(event("content_block_delta", {"type": "content_block_delta", "index": self.index,
                                                 "delta": delta}))

    def call(self, c: ToolCall, out: list[str]) -> None:
        self.close(out)
        self.index += 1
        start = {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}
        out.append(event("content_block_start", {"type": "content_block_start", "index": self.index,
                                                 "content_block": start}))
        out.append(event("content_block_delta", {"type": "content_block_delta", "index": self.index,
                                                 "delta": {"type": "input_json_delta", "partial_json": c.arguments}}))
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": self.index}))

    def close(self, out: list[str]) -> None:
        if self.open is not None:
            out.append(event("content_block_stop", {"type": "content_block_stop", "index": self.index}))
            self.open = None

    def text(self, reasoning: str, content: str, out: list[str]) -> None:
        if reasoning:
            self.write("thinking", {"type": "thinking_delta", "thinking": reasoning}, out)
        if content:
            self.write("text", {"type": "text_delta", "text": content}, out)


class MessageEvents:
    """Anthropic's streamed message (a `StepWriter`); with documents, `message_delta` carries the `sources`."""

    def __init__(self, reply: MessageReply, gen: Generation):
        self.reply, self.gen = reply, gen
        self.blocks = _Blocks()

    def head(self) -> str:
        start = {**self.reply.head(), "content": [], "stop_reason": None, "stop_sequence": None,
                 "usage": {"input_tokens": self.gen.prompt_tokens, "output_tokens": 0}}
        return event("message_start", {"type": "message_start", "message": start}) + event("ping", {"type": "ping"})

    def step(self, step: Step) -> str:
        out: list[str] = []
        self.blocks.text(step.reasoning, step.content, out)
        for c in step.calls:
            self.blocks.call(c, out)
        return "".join(out)

    async def last(self, end: Finished | Failed) -> str:
        if isinstance(end, Failed):
            return event("error", anthropic_error(server_error(end.message)))
        out: list[str] = []
        blocks = self.blocks
        if blocks.index < 0:  # an empty answer is still one (empty) text block
            blocks.write("text", {"type": "text_delta", "text": ""}, out)
        blocks.close(out)
        delta = self.reply.stop(end, self.gen.final_reason(end.reason))
        out.append(event("message_delta", {"type": "message_delta", "delta": delta,
                                           "usage": usage(end.metrics), **self.gen.extension()}))
        out.append(event("message_stop", {"type": "message_stop"}))
        return "".join(out)
