"""Compaction: a chat that outgrows its context goes on from a summary the model writes of it.

The "summarise" overflow policy: once an answer leaves the chat past `threshold` (COMPACT_AT of
the context, less in a small one), or when the next turn would pass it, or on demand (the window's
button, the terminal's /compact), the model is asked, after the whole conversation as it stands,
to summarise it. Its prompt is the conversation's own plus one
instruction, so the backend reuses the conversation's KV cache as its prefix and reads only the
instruction. The summary then stands in for every turn before it: the model's view of the chat is
the system prompt with the summary under it, then the turns that follow (`model_view`). The turns
folded stay where they are, shown and stored; undoing a compaction is dropping its summary.

Qt-free, shared by the window (its engine worker runs it), the terminal and the server (an opt-in
extension field).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace

from prefill.engine.chat_backend import Event
from prefill.engine.events import Finished
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.engine.settings import OverflowSettings

COMPACT_AT = 0.85  # of the context: past this after an answer, a "summarise" chat is compacted
SUMMARY_TOKENS = 512  # the longest summary (an eighth of a small context)
INSTRUCTION_ROOM = 96  # tokens the instruction takes with its turn markers, and then some
INSTRUCTION = (
    "Pause the conversation. Summarise everything above for your own later use, in the language of "
    "the conversation: what the user wants, facts, names, numbers and decisions stated, what you "
    "answered, and what is still open. Write short notes, not a reply; add nothing new."
)
HEADING = "Summary of the conversation so far (earlier turns were folded into it):"

Streamer = Callable[[ChatRequest, threading.Event | None], Iterator[Event]]


class CompactionError(Exception):
    """The model wrote no summary (stopped, cut off, or nothing to fold): the chat is left as it was."""


@dataclass(frozen=True)
class Summary:
    """What a compaction did.

    Attributes:
        text: the summary the model wrote (a person may edit it later).
        folded: the messages it stands in for (the system prompt apart).
        turns: of those, the user's turns.
        tokens_before: the prompt tokens of the conversation it folds, as the model last read it.
        tokens_after: the prompt tokens of the system prompt with the summary under it.
        ms: the time the model took to write it.
        written: the tokens it wrote.
    """

    text: str
    folded: int
    turns: int
    tokens_before: int
    tokens_after: int
    ms: float
    written: int

    @property
    def note(self) -> str:
        """What it did, in words."""
        return (f"{self.turns} earlier turn{'s' if self.turns != 1 else ''} summarised: "
                f"{self.tokens_before:,} tokens → {self.tokens_after:,}")

    def as_dict(self) -> dict[str, object]:
        return {"folded": self.folded, "turns": self.turns, "tokens_before": self.tokens_before,
                "tokens_after": self.tokens_after, "ms": round(self.ms, 1), "written": self.written}


def summary_tokens(n_ctx: int) -> int:
    """The longest summary in a context of `n_ctx`."""
    return min(SUMMARY_TOKENS, max(48, n_ctx // 8))


def threshold(n_ctx: int) -> int:
    """The tokens past which a chat is compacted: COMPACT_AT of the context, or less where the
    conversation, the instruction and the summary would not fit together (a small context)."""
    return int(min(COMPACT_AT * n_ctx, n_ctx - summary_tokens(n_ctx) - INSTRUCTION_ROOM))


def due(policy: str, used_tokens: int, n_ctx: int) -> bool:
    """Whether a chat whose last prompt and answer took `used_tokens` (or whose next prompt will take
    that many) is compacted before its next turn."""
    return policy == "summarise" and n_ctx > 0 and used_tokens >= threshold(n_ctx)


def system_with(system: str, summary: str) -> Message:
    """The system message that carries a summary under the chat's own system prompt."""
    block = f"{HEADING}\n{summary.strip()}"
    return Message("system", f"{system.strip()}\n\n{block}" if system.strip() else block)


def model_view(system: str, summary: str, after: Sequence[Message]) -> list[Message]:
    """The conversation as the model reads it: the system prompt, the summary under it (when there is
    one), then the messages `after` it."""
    if summary.strip():
        head = [system_with(system, summary)]
    else:
        head = [Message("system", system)] if system.strip() else []
    return head + [m for m in after if m.role != "system"]


def summary_request(request: ChatRequest, n_ctx: int) -> ChatRequest:
    """The request that asks for a summary of `request`'s conversation: the same prompt, then the
    instruction; a short, cool answer without thinking or tools. A conversation that already left no
    room for it (one answer took it from below the threshold past the context) loses its oldest
    turns to a rolling window."""
    messages = [*request.messages, Message("user", INSTRUCTION)]
    most = summary_tokens(n_ctx)
    sampling = replace(request.sampling, temperature=min(request.sampling.temperature, 0.3), max_tokens=most, stop=())
    overflow = OverflowSettings(policy="rolling_window", reserve=most)
    return ChatRequest(tuple(messages), sampling, overflow, TemplateOptions(think=False, reasoning_budget=0))


def summarise(
    stream: Streamer, request: ChatRequest, count_tokens: Callable[[ChatRequest], int | None], n_ctx: int,
    cancel: threading.Event | None = None,
) -> Generator[Event, None, Summary]:
    """Have the model summarise `request`'s conversation (its messages: the system prompt, then the
    turns to fold; no new user turn) in a context of `n_ctx`. Yields the backend's events as the
    summary streams; returns the Summary.

    Raises:
        CompactionError: nothing to fold, or the model was stopped or wrote nothing.
        Whatever the backend raises.
    """
    system = next((m.content for m in request.messages if m.role == "system"), "")
    turns = [m for m in request.messages if m.role != "system"]
    if not any(m.role == "assistant" for m in turns):
        raise CompactionError("there is nothing to summarise yet: no answer in this chat")
    before = count_tokens(request.with_messages([*request.messages, Message("user", "")])) or 0
    began = time.perf_counter()
    end: Finished | None = None
    for ev in stream(summary_request(request, n_ctx), cancel):
        if isinstance(ev, Finished):
            end = ev
        yield ev
    if end is None or end.reason == "cancelled":
        raise CompactionError("the summary was stopped: the chat is left as it was")
    text = end.text.strip()
    if not text:
        raise CompactionError("the model wrote no summary: the chat is left as it was")
    after = count_tokens(request.with_messages([system_with(system, text), Message("user", "")])) or 0
    return Summary(text, len(turns), sum(m.role == "user" for m in turns), before, after,
                   (time.perf_counter() - began) * 1000, end.metrics.completion_tokens)

