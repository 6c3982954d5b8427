"""Whether a checked draft writes what plain greedy decoding writes: how far a batched decode's
logits drift from a one-token decode's, measured on the loaded model.

Plain decoding evaluates one token per step; a draft is checked in one batch of several. Whether the
two give the same logits depends on the kernels llama.cpp picks for the weights' type and the
backend, not on anything Prefill can set. Measured on this 2-core CPU with SmolLM2 and flash
attention: Q4_0, Q4_1 and Q8_0 bit-identical; F16 up to 0.02 in the gap between two candidates,
Q4_K up to 0.7 (8 of 148 picks went the other way, all at leads under 0.12 between the two likeliest
tokens). A GPU's batched kernels differ too.

So the drift is measured once per loaded model (`TieMargin.measure`: a few prompt tokens decoded one
at a time and then in batches of several sizes, their rows compared) and kept up to date from every
row that is decoded again on its own. Where it is 0 the batch is the one-token decode, and the answer
is plain greedy decoding's token for token. Where it is not, a row whose two likeliest tokens are
closer than SAFETY times the drift is decoded again on its own, as plain decoding would: that
catches the picks a batch could turn. It cannot make the cache the same: accepted tokens' keys and
values come from the batch, and their rounding reaches later steps, so on such a model an answer may
part from plain decoding's at a later near tie. The engine reports the drift (`draft_drift`) so the
window can say which case an answer is.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from prefill.engine.drafts.draft_length import DecodeCosts
from prefill.engine.errors import EngineError
from prefill.engine.llama.runtime import LlamaRuntime

SIZES = (2, 5, 17)  # the batches the sample is decoded in: short ones, and one as long as a full draft (16 + 1)
CANDIDATES = 8  # the batch row's likeliest tokens compared with its best
SAFETY = 3.0  # a lead under SAFETY x the drift is not trusted to the batch
UNMEASURED = float("inf")  # no measure yet: no batched pick is trusted


def pair_drift(batch_row: np.ndarray, single_row: np.ndarray) -> float:
    """How far the gaps between the batch row's best token and its runner-ups moved in the one-token
    row: a pick turns only if some gap moves by more than the batch's lead."""
    best = int(batch_row.argmax())
    near = np.argpartition(batch_row, -CANDIDATES)[-CANDIDATES:]
    moved = (batch_row[near] - batch_row[best]) - (single_row[near] - single_row[best])
    return float(np.abs(moved).max())


class TieMargin:
    """One loaded model's drift between batched and one-token logits, and the lead under which a
    batched pick is decoded again on its own."""

    def __init__(self) -> None:
        self.drift: float | None = None  # None: not measured yet

    @property
    def margin(self) -> float:
        """A pick whose lead over the runner-up is below this is made the plain way."""
        if self.drift is None:
            return UNMEASURED
        return SAFETY * self.drift

    @property
    def exact(self) -> bool:
        """Whether checked drafts write exactly what plain greedy decoding writes (bit-identical batches)."""
        return self.drift == 0.0

    def observe(self, batch_row: np.ndarray, single_row: np.ndarray) -> None:
        """A row decoded in a batch and again on its own, at the same place."""
        self.drift = max(self.drift or 0.0, pair_drift(batch_row, single_row))

    def measure(self, rows: RowDecoder, sample: Sequence[int], costs: DecodeCosts | None = None) -> bool:
        """Decode `sample` into `rows`' sequence one token at a time, then again in batches
        of SIZES, and keep the largest drift; the sequence holds what it held before afterwards.
        Each decode's time goes to `costs`: the draft length has a step's and a batch's price from
        the start, short batches and one as long as a full draft, before it has checked a draft.
        False (nothing measured) when the sample is short or the context has no room for it."""
        sizes = [min(size, rows.n_batch) for size in SIZES]  # a small batch limits drafts to its size too
        need = sum(sizes)
        sample = list(sample)[-need:]
        if len(sample) < need or rows.start + need >= rows.n_ctx or rows.n_batch < 2:
            return False
        singles: list[np.ndarray] = []
        try:
            for token in sample:
                began = time.perf_counter()
                row = rows.one(token)
                if row is None:
                    return False
                if costs is not None:
                    costs.add(1, time.perf_counter() - began)
                singles.append(row)
            _reset(rows)
            drift, at = 0.0, 0
            for size in sizes:
                began = time.perf_counter()
                batch = rows.many(sample[at : at + size])
                if batch is None:
                    return False
                if costs is not None:
                    costs.add(size, time.perf_counter() - began)
                drift = max(drift, *(pair_drift(b, singles[at + i]) for i, b in enumerate(batch)))
                at += size  # the next batch follows this one, as the single tokens followed each other
            self.drift = max(self.drift or 0.0, drift)
            return True
        finally:
            _reset(rows)


class RowDecoder(Protocol):
    """A sequence the drift measure decodes into, and its logits."""

    start: int  # the cells the sequence holds when it is handed over
    n_ctx: int  # the cells it may hold
    n_batch: int  # the most tokens one decode takes

    def one(self, token: int) -> np.ndarray | None:
        """Decode `token` next in the sequence; a copy of its logits (None: it did not fit)."""

    def many(self, tokens: Sequence[int]) -> list[np.ndarray] | None:
        """Decode `tokens` next in the sequence in one batch; a copy of each one's logits."""

    def reset(self) -> bool:
        """Drop what was decoded since the sequence was handed over; False when it cannot."""


class SeqZero:
    """The chat engine's one sequence, after its first `start` cells."""

    def __init__(self, rt: LlamaRuntime, start: int):
        self.rt, self.start = rt, start
        self.n_ctx, self.n_batch = rt.n_ctx, rt.n_batch

    def one(self, token: int) -> np.ndarray | None:
        return self.rt.logits_at(-1) if self.rt.decode_one(token) == 0 else None

    def many(self, tokens: Sequence[int]) -> list[np.ndarray] | None:
        if self.rt.decode_all(tokens) != 0:
            return None
        return [self.rt.logits_at(i) for i in range(len(tokens))]

    def reset(self) -> bool:
        return self.rt.kv_drop_from(self.start)


def _reset(rows: RowDecoder) -> None:
    if not rows.reset():
        raise EngineError("llama.cpp could not drop the drift sample from the KV cache")
