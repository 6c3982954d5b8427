"""Compaction's rules, apart from running the model: when a chat is summarised, what the summary
request is, and what the model reads afterwards (session/compaction.py runs it).

A chat under the "summarise" policy is compacted once an answer leaves it past `threshold` of the
context (COMPACT_AT, less in a small context so that the conversation, the instruction and the
summary fit together), or before a turn that would pass it. The summary is asked for after the whole
conversation (`summary_request`: the same prompt plus one instruction, so a backend reuses the
conversation's KV cache as its prefix), and then stands in for every turn before it: the model reads
the system prompt with the summary under it, then the turns after (`model_view`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

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
