"""Speculative decoding in the server's slots: drafts checked in the shared batch.

A slot whose request samples greedily puts a draft right after its next token, in the same batch as
every other slot's token, with the logits of every drafted position kept. After the one
`llama_decode`, `verify` takes the draft up to the first position whose argmax differs from it, and
that argmax is the slot's next token; the rejected cells leave that slot's sequence only.

Drafts come from one `SlotDraftSource`, asked once a step for every drafting slot: `NgramSlots`
(what followed the last occurrence of a slot's latest n-gram in its prompt or answer) or
`SlotDraftModel` (slot_draft_model.py: a small model with the same vocabulary, one sequence per
slot). Everything else (the adaptive length, the counts, the check) is the same for both.

The rules are the chat engine's (`engine/drafts/rules.py`): greedy sampling with neutral penalties,
flash attention (without it a batched decode's logits differ from a one-token decode's on the CPU),
no grammar, a cache that can drop a tail. As there, the model's drift between batched and one-token
logits is measured before its first draft is checked (`SeqRows`, batch_drift.py), and a row whose two
likeliest tokens are closer than the margin drawn from it is not trusted to the batch: its input is
dropped from the cache and decoded again the plain way in the next step.

How long each slot's draft is: the slots share one decode, so a drafted token costs every slot the
time it adds to that decode. The scheduler measures its decodes (`DecodeCosts`) and gives the room
to the drafted tokens likeliest to be taken while they bring more tokens per second than they cost
(`draft_length.share`), each slot's chance from its own drafts so far. Whether a slot drafts at all is
judged by what its drafted steps realised against plain steps (`step_rates.StepRates`, its `gate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from prefill.engine.batch.request import BatchRequest
from prefill.engine.batch.runtime import BatchRuntime, TokenBatch
from prefill.engine.drafts.batch_drift import SIZES
from prefill.engine.drafts.draft_length import DraftLength, Prior, flat_prior
from prefill.engine.drafts.ngram_draft import NgramIndex
from prefill.engine.drafts.rules import SPECULATIVE_MODES, why_not, why_not_thinking
from prefill.engine.drafts.step_rates import DraftGate
from prefill.engine.settings import ServeSampling
from prefill.engine.speculation import DRAFT_MAX

_PLAIN_GREEDY = ServeSampling(temperature=0.0, repeat_penalty=1.0)


def check_mode(mode: str) -> str:
    """`mode` when the server's slots can speculate that way; ValueError otherwise."""
    if mode not in SPECULATIVE_MODES:  # "draft": a draft model (SlotDraftModel)
        raise ValueError(f"speculative decoding in the server's slots is one of {', '.join(SPECULATIVE_MODES)}, "
                         f"not {mode!r}")
    return mode


class History(Protocol):
    """A request's text so far (prompt, then each token taken), as its draft source keeps it."""

    def append(self, token: int) -> None: ...

    def kind(self) -> int:
        """Which kind of draft the next one would be (see speculative.DraftSource.kind); -1: none."""


class SlotDraftSource(Protocol):
    """Where the server's greedy slots get their drafts; used by the scheduler thread only."""

    def prior(self, kind: int) -> tuple[float, float]:
        """What drafts of `kind` are expected to bring before any is judged (draft_length.Prior)."""

    def history(self, prompt: Sequence[int]) -> History:
        """A new request's text, to be told each token the answer takes."""

    def draft_all(self, asks: Sequence[tuple[int, History, int]]) -> list[list[int]]:
        """For each (slot, its history, limit): up to `limit` tokens that may follow its text."""

    def close(self) -> None:
        """Free what the source holds."""


class NgramSlots:
    """Drafts from each request's own text: an `NgramIndex` per request."""

    def prior(self, kind: int) -> tuple[float, float]:
        return NgramIndex.prior(kind)

    def history(self, prompt: Sequence[int]) -> History:
        return NgramIndex(prompt)

    def draft_all(self, asks: Sequence[tuple[int, History, int]]) -> list[list[int]]:
        return [h.draft(limit) if isinstance(h, NgramIndex) else [] for _, h, limit in asks]

    def close(self) -> None:
        pass


def runtime_why_not(rt: BatchRuntime) -> str:
    """Why no slot of this model can speculate, whatever its request asks; "" when some may."""
    return why_not(rt, _PLAIN_GREEDY, None)


def slot_why_not(rt: BatchRuntime, request: BatchRequest) -> str:
    """Why this request's slot decodes one token per step; "" when it may speculate."""
    return why_not(rt, request.sampling, request.constraint) or why_not_thinking(request.thinking)


class SlotDrafts:
    """One request's side of speculation: its text (the source's `History`), the adaptive length,
    and how many drafted tokens the model checked and accepted."""

    def __init__(self, history: History, most: int = DRAFT_MAX, prior: Prior = flat_prior,
                 judged: dict[int, list[float]] | None = None):
        """`judged`: the acceptance by kind that the slots share (DraftLength), None: this request's own."""
        self.history = history
        self.length = DraftLength(most=most, prior=prior, judged=judged)
        self.drafted = 0
        self.accepted = 0
        self.plain_next = False  # after a near tie: the next step decodes one token, as plain decoding does
        self.gate = DraftGate()  # whether its drafts pay, as the server's steps realise them (step_rates.py)

    def taken(self, token: int) -> None:
        """A token of the answer was emitted: it is part of the text drafts follow."""
        self.history.append(token)

    def ask(self, limit: int) -> tuple[float, int] | None:
        """(the chance a drafted token is taken, the longest draft) for this step's share of the
        decode, at most `limit` tokens (the slot's context, max_tokens); None when it drafts nothing
        (a near tie's plain step, no room, nothing to draft from)."""
        if self.plain_next or limit <= 0:
            return None
        kind = self.history.kind()
        if kind < 0:
            return None
        return self.length.chance(kind), min(limit, self.length.most)

    def want(self, limit: int, worth: int | None) -> int:
        """How long a draft to ask for this step, at most `limit` (the room left in the batch, the
        slot's context, max_tokens); `worth`: the length the shared decode's costs give it (None:
        not known yet, acceptance alone decides). 0 when none (a near tie's plain step, the length
        backs off)."""
        if self.plain_next:
            self.plain_next = False
            return 0
        if limit <= 0:
            return 0  # no room this step: the back-off counts steps that drafted, not full ones
        return min(self.length.want(self.history.kind(), worth), limit)

    def checked(self, drafted: int, accepted: int) -> None:
        self.drafted += drafted
        self.accepted += accepted
        self.length.taken(drafted, accepted)


class SeqRows:
    """One slot's sequence as the drift measure decodes into it (batch_drift.RowDecoder): after its
    first `start` cells, with a batch of its own, and back to `start` cells on `reset`."""

    def __init__(self, rt: BatchRuntime, seq: int, start: int):
        self.rt, self.seq, self.start = rt, seq, start
        self.n_ctx, self.n_batch = rt.n_ctx_seq, rt.n_batch
        self.batch = TokenBatch(max(SIZES), rt.n_seq)

    def one(self, token: int) -> np.ndarray | None:
        b = self.batch
        b.clear()
        b.add_one(token, self.rt.seq_cells(self.seq), self.seq)
        return self.rt.row_at(0) if self.rt.decode_batch(b) == 0 else None

    def many(self, tokens: Sequence[int]) -> list[np.ndarray] | None:
        b = self.batch
        b.clear()
        b.add_all(tokens, self.rt.seq_cells(self.seq), self.seq)
        return [self.rt.row_at(i) for i in range(len(tokens))] if self.rt.decode_batch(b) == 0 else None

    def reset(self) -> bool:
        return self.rt.seq_truncate(self.seq, self.start) == self.start


@dataclass(frozen=True)
class Verdict:
    """What a decoded draft came to."""

    accepted: list[int]  # the draft's prefix the model agreed with, in order
    next_token: int | None  # the model's pick after them; None: a near tie, decode the last input again


def verify(rt: BatchRuntime, token_row: int, draft_row: int, draft: Sequence[int], margin: float) -> Verdict:
    """Check a draft decoded in batch rows draft_row… after the slot's token (in row `token_row`); a
    row whose lead is under `margin` is a near tie."""
    for i in range(len(draft) + 1):
        best, lead = rt.lead_at(token_row if i == 0 else draft_row + i - 1)
        if lead < margin:
            return Verdict(list(draft[:i]), None)
        if i == len(draft) or best != draft[i]:
            return Verdict(list(draft[:i]), best)
    raise AssertionError("unreachable: the last row always returns")
