"""The Responses API's replies from the core's events: a response whole, or its SSE stream.

The output is items: a `reasoning` item (the thinking, as `reasoning_text`), a `message` item (its
`output_text`), and a `function_call` item per call, in the order the model wrote them. The stream
sends `response.created` and `response.in_progress`, then each item's `output_item.added`, its deltas
(`output_text.delta` in a `content_part`, `reasoning_text.delta`, `function_call_arguments.delta`)
and their `.done` events and `output_item.done`, then `response.completed`, or `response.incomplete`
for an answer cut by `max_output_tokens` (or the context); each event has its `sequence_number`. A
whole response and a streamed one of the same answer end with the same object, and a kept response is
that object.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from starlette.requests import Request

from prefill.engine.batch.request import Failed
from prefill.engine.events import Finished, MetricsSnapshot
from prefill.engine.message import ToolCall
from prefill.server.core import Generation, Step
from prefill.server.generate import sse_event

CUT = ("length", "context_full")  # the engine's finish reasons that leave a response incomplete
Keep = Callable[[dict[str, Any]], Awaitable[None]]  # keeps a finished response (store: true)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def usage(m: MetricsSnapshot, reasoning_tokens: int) -> dict[str, Any]:
    """The Responses API's usage: the prompt's tokens (those the prefix cache held among them), the
    answer's (those spent thinking among them)."""
    return {"input_tokens": m.prompt_tokens,
            "input_tokens_details": {"cached_tokens": m.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": m.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": min(reasoning_tokens, m.completion_tokens)},
            "total_tokens": m.prompt_tokens + m.completion_tokens}


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant",
            "content": [output_text(text)] if status != "in_progress" else []}


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def reasoning_item(item_id: str, text: str) -> dict[str, Any]:
    return {"id": item_id, "type": "reasoning", "summary": [],
            "content": [{"type": "reasoning_text", "text": text}] if text else []}


def call_item(item_id: str, c: ToolCall, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "function_call", "status": status, "call_id": c.id, "name": c.name,
            "arguments": c.arguments if status != "in_progress" else ""}


@dataclass
class ResponseReply:
    """One response's identity, what it repeats of its request, and its whole body.

    `count` counts a text's tokens (the thinking's, for `reasoning_tokens`)."""

    model: str
    echo: dict[str, Any]
    store: bool
    count: Callable[[str], int]
    id: str = field(default_factory=lambda: new_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))

    def body(self, status: str, output: list[dict[str, Any]], reason: str = "",
             use: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response object: `status` in_progress, completed, incomplete (for the engine's `reason`)
        or failed."""
        out = {"id": self.id, "object": "response", "created_at": self.created_at, "status": status,
               "background": False, "error": None, "incomplete_details": None, "model": self.model,
               "output": output, "store": self.store, **self.echo, "usage": use}
        if status == "incomplete":
            out["incomplete_details"] = {"reason": "max_output_tokens" if reason in CUT else reason}
        if status in ("completed", "incomplete"):
            out["completed_at"] = int(time.time())
        return out

    def status(self, reason: str) -> str:
        return "incomplete" if reason in CUT else "completed"

    async def usage(self, m: MetricsSnapshot, reasoning: str) -> dict[str, Any]:
        n = await anyio.to_thread.run_sync(self.count, reasoning) if reasoning else 0
        return usage(m, n)


async def full_reply(reply: ResponseReply, gen: Generation, request: Request) -> dict[str, Any]:
    """The whole response (with documents, its `sources`). A client that disconnects while waiting cancels
    the request."""
    done = await gen.whole(request)
    ev, reasoning, content, calls = done.end, done.reasoning, done.content, done.calls
    status = reply.status(ev.reason)
    output: list[dict[str, Any]] = []
    if reasoning:
        output.append(reasoning_item(new_id("rs"), reasoning))
    if content or not calls:
        last = not calls and status == "incomplete"
        output.append(message_item(new_id("msg"), content, "incomplete" if last else "completed"))
    output += [call_item(new_id("fc"), c) for c in calls]
    body = reply.body(status, output, ev.reason, await reply.usage(ev.metrics, reasoning.strip()))
    body.update(gen.extension())
    return body


class _Items:
    """The stream's output items: at most one open (a message or the thinking); a new kind closes the
    one before; each event numbered."""

    def __init__(self) -> None:
        self.seq = 0
        self.output: list[dict[str, Any]] = []
        self.open: str | None = None  # "message" or "reasoning"
        self.text: list[str] = []
        self.thinking: list[str] = []  # the whole answer's, for usage

    def event(self, name: str, out: list[str], **fields: Any) -> None:
        out.append(sse_event(name, {"type": name, "sequence_number": self.seq, **fields}))
        self.seq += 1

    @property
    def at(self) -> dict[str, Any]:
        """The open item's place, as its events name it."""
        return {"item_id": self.output[-1]["id"], "output_index": len(self.output) - 1}

    def write(self, kind: str, delta: str, out: list[str]) -> None:
        if self.open != kind:
            self.close(out)
            self.open, self.text = kind, []
            item = message_item(new_id("msg"), "", "in_progress") if kind == "message" \
                else reasoning_item(new_id("rs"), "")
            self.output.append(item)
            self.event("response.output_item.added", out, output_index=len(self.output) - 1, item=item)
            if kind == "message":
                self.event("response.content_part.added", out, **self.at, content_index=0, part=output_text(""))
        self.text.append(delta)
        if kind == "message":
            self.event("response.output_text.delta", out, **self.at, content_index=0, delta=delta, logprobs=[])
        else:
            self.thinking.append(delta)
            self.event("response.reasoning_text.delta", out, **self.at, content_index=0, delta=delta)

    def close(self, out: list[str], status: str = "completed") -> None:
        if self.open is None:
            return
        text, item_id = "".join(self.text), self.output[-1]["id"]
        if self.open == "message":
            self.event("response.output_text.done", out, **self.at, content_index=0, text=text, logprobs=[])
            self.event("response.content_part.done", out, **self.at, content_index=0, part=output_text(text))
            self.output[-1] = message_item(item_id, text, status)
        else:
            self.event("response.reasoning_text.done", out, **self.at, content_index=0, text=text)
            self.output[-1] = reasoning_item(item_id, text)
        self.event("response.output_item.done", out, output_index=len(self.output) - 1, item=self.output[-1])
        self.open = None

    def call(self, c: ToolCall, out: list[str]) -> None:
        self.close(out)
        item_id = new_id("fc")
        self.output.append(call_item(item_id, c, "in_progress"))
        self.event("response.output_item.added", out, output_index=len(self.output) - 1, item=self.output[-1])
        self.event("response.function_call_arguments.delta", out, **self.at, delta=c.arguments)
        self.event("response.function_call_arguments.done", out, **self.at, arguments=c.arguments)
        self.output[-1] = call_item(item_id, c)
        self.event("response.output_item.done", out, output_index=len(self.output) - 1, item=self.output[-1])

    def step(self, step: Step) -> list[str]:
        """The events of a batch of the answer: its thinking, its text, the calls finished in it."""
        out: list[str] = []
        if step.reasoning:
            self.write("reasoning", step.reasoning, out)
        if step.content:
            self.write("message", step.content, out)
        for c in step.calls:
            self.call(c, out)
        return out

    def end(self, status: str, out: list[str]) -> None:
        """Close the last item; an answer with no message and no call still has its (empty) message."""
        if not any(i["type"] in ("message", "function_call") for i in self.output):
            self.write("message", "", out)
        self.close(out, "incomplete" if status == "incomplete" and self.open == "message" else "completed")


class ResponseEvents:
    """A streamed response's events (a `StepWriter`); with documents, `response.completed` carries the
    `sources`. `keep` keeps the finished response (store: true)."""

    def __init__(self, reply: ResponseReply, gen: Generation, keep: Keep | None = None):
        self.reply, self.gen, self.keep = reply, gen, keep
        self.items = _Items()

    def head(self) -> str:
        head: list[str] = []
        self.items.event("response.created", head, response=self.reply.body("in_progress", []))
        self.items.event("response.in_progress", head, response=self.reply.body("in_progress", []))
        return "".join(head)

    def step(self, step: Step) -> str:
        return "".join(self.items.step(step))

    async def last(self, end: Finished | Failed) -> str:
        items, reply = self.items, self.reply
        out: list[str] = []
        if isinstance(end, Finished):
            status = reply.status(end.reason)
            items.end(status, out)
            body = reply.body(status, items.output, end.reason,
                              await reply.usage(end.metrics, "".join(items.thinking).strip()))
            body.update(self.gen.extension())
            if self.keep is not None:
                await self.keep(body)
        else:  # Failed: nothing is kept
            status, body = "failed", reply.body("failed", items.output)
            body["error"] = {"code": "server_error", "message": end.message}
        items.event(f"response.{status}", out, response=body)
        return "".join(out)
