"""OpenAI's response objects: completions, streamed chunks, usage, and Prefill's own figures.

Non-streamed responses carry `usage`; streamed ones carry it in a last chunk with no
choices when `stream_options.include_usage` is set, as OpenAI does. Both carry
`timings`, Prefill's figures for the request (TTFT, prefill and decode rates, cached tokens).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from prefill.engine.events import MetricsSnapshot
from prefill.engine.message import Message, ToolCall
from prefill.wire.openai_chat import call_fragments, encode_message

# finish reasons of the engine -> OpenAI's; a full slot context ends the answer as max_tokens would
_FINISH = {"stop": "stop", "length": "length", "context_full": "length", "cancelled": "stop",
           "tool_calls": "tool_calls"}
TIMING_FIELDS = (
    "ttft_ms", "prefill_ms", "prefill_tps", "decode_tps", "itl_p50_ms", "itl_p95_ms",
    "prompt_tokens", "cached_tokens", "evaluated_tokens", "completion_tokens", "kv_used", "kv_total",
)


def finish_reason(reason: str) -> str:
    return _FINISH.get(reason, "stop")


def usage(m: MetricsSnapshot) -> dict[str, object]:
    return {
        "prompt_tokens": m.prompt_tokens,
        "completion_tokens": m.completion_tokens,
        "total_tokens": m.prompt_tokens + m.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": m.cached_tokens},
    }


def timings(m: MetricsSnapshot, load_ms: float = 0.0) -> dict[str, object]:
    """The request's figures; `load_ms`: how long it waited for its model to load, counted in
    `ttft_ms` too, and given only for a request that waited (as the draft counts for one that speculated)."""
    out = {k: round(v, 3) if isinstance(v, float) else v for k in TIMING_FIELDS for v in [getattr(m, k)]}
    if m.draft_n > 0:  # as llama.cpp's server: only for a request that speculated
        out.update(draft_n=m.draft_n, draft_n_accepted=m.draft_n_accepted)
    if load_ms > 0:
        out["load_ms"] = round(load_ms, 3)
        out["ttft_ms"] = round(m.ttft_ms + load_ms, 3)
    return out


def model_list(models: Sequence[dict[str, object]]) -> dict[str, object]:
    return {"object": "list", "data": list(models)}


def sse(obj: object) -> str:
    return f"data: {json.dumps(obj, ensure_ascii=False, separators=(',', ':'))}\n\n"


SSE_DONE = "data: [DONE]\n\n"
_json_str = json.JSONEncoder(ensure_ascii=False).encode


@dataclass
class Reply:
    """One response's identity and its builders, for a chat or a text completion."""

    kind: str  # "chat" or "completion"
    model: str
    id: str = field(default="")
    created: int = field(default_factory=lambda: int(time.time()))
    extra: dict[str, object] = field(default_factory=dict)  # Prefill's own fields: in the body, or the first chunk
    load_ms: float = 0.0  # the wait for the model's load (timings.load_ms, and in ttft_ms)

    _text_frame: tuple[str, str] = field(default=("", ""), init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.id:
            prefix = "chatcmpl" if self.kind == "chat" else "cmpl"
            self.id = f"{prefix}-{uuid.uuid4().hex}"
        # A text chunk is the same bytes around its text every time: encoded once, split at a
        # marker (the last one: the text comes after the id and the model, which could hold one)
        head, _, tail = sse(self.chunk("\x00")).rpartition(_json_str("\x00"))
        self._text_frame = (head, tail)

    def _head(self, obj: str) -> dict[str, object]:
        return {"id": self.id, "object": obj, "created": self.created, "model": self.model}

    def full(self, content: str, reasoning: str, reason: str, m: MetricsSnapshot,
             calls: Sequence[ToolCall] = ()) -> dict[str, object]:
        """The non-streamed response; with `calls`, the assistant's tool calls (finish reason "tool_calls")."""
        if self.kind == "chat":
            message = encode_message(Message("assistant", content, tool_calls=tuple(calls)))
            if reasoning:
                message["reasoning_content"] = reasoning
            if calls:
                reason = "tool_calls" if reason == "stop" else reason  # cut off after its calls: "length"
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(reason)}
            body = self._head("chat.completion")
        else:
            choice = {"index": 0, "text": content, "logprobs": None, "finish_reason": finish_reason(reason)}
            body = self._head("text_completion")
        body.update(choices=[choice], usage=usage(m), timings=timings(m, self.load_ms), **self.extra)
        return body

    def chunk(self, content: str = "", reasoning: str = "", first: bool = False,
              reason: str | None = None, m: MetricsSnapshot | None = None) -> dict[str, object]:
        """One streamed chunk: a piece of text, or (with `reason`) the last one with the figures."""
        done = finish_reason(reason) if reason is not None else None
        if self.kind == "chat":
            delta: dict[str, object] = {}
            if first:
                delta["role"] = "assistant"
            if content or first:
                delta["content"] = content
            if reasoning:
                delta["reasoning_content"] = reasoning
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": done}
            body = self._head("chat.completion.chunk")
        else:
            choice = {"index": 0, "text": content, "logprobs": None, "finish_reason": done}
            body = self._head("text_completion")
        body["choices"] = [choice]
        if m is not None:
            body["timings"] = timings(m, self.load_ms)
        if first:
            body.update(self.extra)
        return body

    def text_chunk(self, reasoning: str, content: str) -> str:
        """The SSE event of a piece of text ("" when there is none); the text alone is encoded
        when it is all answer, since this runs for every token of every stream."""
        if reasoning:
            return sse(self.chunk(content, reasoning))
        if not content:
            return ""
        head, tail = self._text_frame
        return head + _json_str(content) + tail

    def tool_call_chunks(self, calls: Sequence[ToolCall], first_index: int) -> str:
        """The SSE events of finished calls, as OpenAI streams them: each call's index, id and name
        first, then its arguments."""
        out = []
        for i, c in enumerate(calls, first_index):
            for part in call_fragments(c, i):
                body = self._head("chat.completion.chunk")
                body["choices"] = [{"index": 0, "delta": {"tool_calls": [part]}, "logprobs": None,
                                    "finish_reason": None}]
                out.append(sse(body))
        return "".join(out)

    def usage_chunk(self, m: MetricsSnapshot) -> dict[str, object]:
        """The extra last chunk of `stream_options.include_usage`: no choices, the usage."""
        body = self._head("chat.completion.chunk" if self.kind == "chat" else "text_completion")
        body.update(choices=[], usage=usage(m), timings=timings(m, self.load_ms))
        return body
