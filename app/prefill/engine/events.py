"""The typed events a streamed chat yields, in order.

PrefillDone, then Token… (with a MetricsSnapshot every few hundred ms, and a ToolCalled for each
call the model writes when it was offered tools), then Finished. All are frozen so they can cross
threads as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from prefill.engine.message import ToolCall

# Why an answer ended: it ended itself, made calls, hit max_tokens, was stopped, filled the context, failed
FinishReason = Literal["stop", "tool_calls", "length", "cancelled", "context_full", "error"]
FINISH_REASONS: tuple[FinishReason, ...] = get_args(FinishReason)


@dataclass(frozen=True)
class PrefillDone:
    prompt_tokens: int  # the whole prompt
    cached_tokens: int  # reused from the KV cache of earlier turns
    evaluated_tokens: int  # run through the model now
    prefill_ms: float  # llama.cpp's own timer for the prompt pass
    dropped_messages: tuple[int, ...] = ()  # indices dropped by the overflow policy
    overflow_note: str = ""
    cache_note: str = ""  # why more than the new tokens were evaluated (a cache that cannot be trimmed)
    restored_tokens: int = 0  # of cached_tokens, those restored from the disk cache before this request
    restore_ms: float = 0.0  # how long that restore took
    image_tokens: int = 0  # of prompt_tokens' positions, the images' embeddings (their count)
    image_encode_ms: float = 0.0  # the vision encoder's time on this prompt's new images (not in prefill_ms)


@dataclass(frozen=True)
class Token:
    text: str  # complete UTF-8 characters only
    n_tokens: int  # tokens generated so far
    reasoning: bool = False  # the model's thinking, not its answer


@dataclass(frozen=True)
class ToolCalled:
    """The model finished writing a tool call (its markers never reach the answer's text)."""

    call: ToolCall
    n_tokens: int  # tokens generated so far


@dataclass(frozen=True)
class MetricsSnapshot:
    prompt_tokens: int = 0
    cached_tokens: int = 0
    evaluated_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0  # of completion_tokens, those spent thinking
    ttft_ms: float = 0.0
    answer_ttft_ms: float = 0.0  # to the first token of the answer proper (after any thinking)
    prefill_ms: float = 0.0
    prefill_tps: float = 0.0
    decode_tps: float = 0.0
    itl_p50_ms: float = 0.0
    itl_p95_ms: float = 0.0
    kv_used: int = 0
    kv_total: int = 0  # 0: the KV cache is not visible (a remote engine): its fill is unknown, not empty
    kv_bytes: int = 0
    kv_bytes_total: int = 0
    finish_reason: FinishReason | Literal[""] = ""
    draft_n: int = 0  # speculative decoding: draft tokens checked by the model (0: it did not run)
    draft_n_accepted: int = 0  # of those, the ones the model agreed with
    # How far this model's batched logits drift from one-token ones (batch_drift.py): 0, the answer is
    # plain greedy decoding's token for token; more, it may part from it at a near tie; -1: not measured.
    draft_drift: float = -1.0
    image_tokens: int = 0  # image embeddings in the prompt (0: no image)
    image_encode_ms: float = 0.0  # the vision encoder's time on this prompt's new images

    @property
    def kv_known(self) -> bool:
        """Whether the KV figures were measured (a local model) rather than unknown (a remote one)."""
        return self.kv_total > 0

    def as_dict(self) -> dict[str, float | int | str]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Finished:
    reason: FinishReason  # "error": see `error`
    text: str  # the answer, without the thinking (with "error": what came before the failure)
    metrics: MetricsSnapshot = field(default_factory=MetricsSnapshot)
    reasoning: str = ""  # the thinking, apart
    error: str = ""  # with reason "error": what cut the answer short, in words
    tool_calls: tuple[ToolCall, ...] = ()  # the calls the answer made, in order
    malformed_calls: tuple[str, ...] = ()  # why each call the model began did not parse (its text is in `text`)
    stop: str = ""  # the stop string that ended the answer (reason "stop"; "" for an end of turn or none)
