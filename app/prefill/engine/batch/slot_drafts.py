"""Speculative decoding in the server's slots, with drafts taken from the text itself.

A slot whose request samples greedily puts its n-gram draft (`NgramIndex`: what followed the last
occurrence of its latest n-gram in its prompt or answer) right after its next token, in the same
batch as every other slot's token, with the logits of every drafted position kept. After the one
`llama_decode`, `verify` takes the draft up to the first position whose argmax differs from it, and
that argmax is the slot's next token; the rejected cells leave that slot's sequence only.

The rules are the chat engine's (`engine/local/speculative.py`, imported rather than restated):
greedy sampling with neutral penalties, flash attention (without it a batched decode's logits
differ from a one-token decode's on the CPU), no grammar, a cache that can drop a tail. As there, a
row whose two likeliest tokens are nearly tied (NEAR_TIE) is not trusted to the batch: its input
is dropped from the cache and decoded again the plain way in the next step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prefill.engine.batch.request import BatchRequest
from prefill.engine.batch.runtime import BatchRuntime
from prefill.engine.drafts.ngram_draft import DraftLength, NgramIndex
from prefill.engine.drafts.rules import NEAR_TIE, why_not
from prefill.engine.settings import ServeSampling

SLOT_SPECULATIVE_MODES = ("off", "ngram")  # a draft model is the chat engine's only
_PLAIN_GREEDY = ServeSampling(temperature=0.0, repeat_penalty=1.0)


def check_mode(mode: str) -> str:
    """`mode` when the server's slots can speculate that way; ValueError otherwise."""
    if mode not in SLOT_SPECULATIVE_MODES:
        raise ValueError(f"speculative decoding in the server's slots is one of {', '.join(SLOT_SPECULATIVE_MODES)}, "
                         f"not {mode!r}")
    return mode


def runtime_why_not(rt: BatchRuntime) -> str:
    """Why no slot of this model can speculate, whatever its request asks; "" when some may."""
    return why_not(rt, _PLAIN_GREEDY, None)


def slot_why_not(rt: BatchRuntime, request: BatchRequest) -> str:
    """Why this request's slot decodes one token per step; "" when it may speculate."""
    return why_not(rt, request.sampling, request.constraint)


class SlotDrafts:
    """One request's drafts: its n-gram index (prompt and answer so far), the adaptive length, and
    how many drafted tokens the model checked and accepted."""

    def __init__(self, prompt: Sequence[int]):
        self.index = NgramIndex(prompt)
        self.length = DraftLength()
        self.drafted = 0
        self.accepted = 0
        self.plain_next = False  # after a near tie: the next step decodes one token, as plain decoding does

    def taken(self, token: int) -> None:
        """A token of the answer was emitted: it is part of the text drafts are looked up in."""
        self.index.append(token)

    def propose(self, limit: int) -> list[int]:
        """This step's draft, at most `limit` tokens (the room left in the batch, the slot's context,
        max_tokens); [] when there is none or the length backs off."""
        if self.plain_next:
            self.plain_next = False
            return []
        if limit <= 0:
            return []  # no room this step: the back-off counts steps that drafted, not full ones
        want = min(self.length.want(), limit)
        return self.index.draft(want) if want > 0 else []

    def checked(self, drafted: int, accepted: int) -> None:
        self.drafted += drafted
        self.accepted += accepted
        self.length.taken(drafted, accepted)


@dataclass(frozen=True)
class Verdict:
    """What a decoded draft came to."""

    accepted: list[int]  # the draft's prefix the model agreed with, in order
    next_token: int | None  # the model's pick after them; None: a near tie, decode the last input again


def verify(rt: BatchRuntime, token_row: int, draft_row: int, draft: Sequence[int]) -> Verdict:
    """Check a draft decoded in batch rows draft_row… after the slot's token (in row `token_row`)."""
    for i in range(len(draft) + 1):
        best, lead = rt.lead_at(token_row if i == 0 else draft_row + i - 1)
        if lead < NEAR_TIE:
            return Verdict(list(draft[:i]), None)
        if i == len(draft) or best != draft[i]:
            return Verdict(list(draft[:i]), best)
    raise AssertionError("unreachable: the last row always returns")
