"""Speculative decoding: drafts of the next tokens, checked greedily in one decode.

When sampling is greedy (temperature 0), the answer is the model's argmax at every step, so a
guess of the next few tokens can be checked all at once: the guess comes from a `DraftSource` (an
`NgramIndex`: what followed the last occurrence of the latest n-gram in the prompt or the answer,
see ngram_draft.py; or a `DraftModel`: a small model with the same vocabulary, see draft_model.py)
and is decoded after the current token in ONE `llama_decode` that keeps the logits of every position (`decode_all`);
the draft is taken up to the first position whose argmax differs from it, and that argmax is the
next token. Rejected positions leave the KV cache (`kv_drop_from`) before anything else is decoded.

The answer is the one plain greedy decoding writes only if a batched decode gives the logits a
one-token decode gives. That depends on the kernels of the model's weight type and the backend
(bit-identical on llama.cpp's CPU backend for Q4_0, Q4_1 and Q8_0 with flash attention; not for
Q4_K, F16 or a GPU; never without flash attention, which speculation therefore asks for): the drift
is measured on the loaded model before its first draft is checked (batch_drift.py). Where it is not
0, a position whose two likeliest tokens are closer than a margin drawn from it is decoded again on
its own and sampled the plain way, and the answer's `draft_drift` says the text may part from plain
decoding's at a near tie. Every token taken goes through the same `AnswerDecoder` (UTF-8, stop
strings) and the same checks (end of generation, max_tokens, cancel, context) one by one, so a
rejected draft never reaches the text.

The check is greedy verification, not the acceptance rule of speculative sampling: the text is
exactly what plain greedy decoding writes, whatever the drafts were, and a draft that was not the
argmax is never taken. Hence speculation is off, with the reason in `why_not`, unless sampling is
greedy (temperature 0) with neutral penalties (repeat penalty 1: a penalty changes the argmax by
what was accepted, which raw logits do not show), flash attention is on (above), the answer has no
grammar (it judges tokens outside the chain), and the cache can drop a tail (not recurrent or hybrid
memory, no sliding window that a draft could push cells out of).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Protocol

from prefill.engine.chat_backend import Event
from prefill.engine.drafts.batch_drift import SeqZero, TieMargin
from prefill.engine.drafts.draft_length import DraftLength
from prefill.engine.errors import EngineError
from prefill.engine.events import FinishReason, MetricsSnapshot
from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.metrics import RequestClock
from prefill.engine.prompt.answer_decoder import AnswerDecoder
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.settings import SamplingSettings

SNAPSHOT_EVERY_S = 0.25


class DraftSource(Protocol):
    """Where drafts come from, for one answer: told each token the answer takes, asked for guesses."""

    def append(self, token: int) -> None:
        """The model took `token` (the text's next token)."""

    def kind(self) -> int:
        """Which kind of draft the next one would be, judged apart from the others (the length of
        the n-gram it follows; one kind for a draft model); -1 when there is none to be had."""

    def prior(self, kind: int) -> tuple[float, float]:
        """What drafts of `kind` are expected to bring before any is judged (draft_length.Prior)."""

    def draft(self, limit: int) -> list[int]:
        """Up to `limit` tokens that may follow the text so far ([] for none)."""

    @property
    def token_seconds(self) -> float:
        """What guessing one drafted token costs the source itself (0 for a lookup in the text)."""


@dataclass
class DraftStats:
    margin: TieMargin  # the model's batch drift (kept by the engine across answers)
    drafted: int = 0  # draft tokens proposed and checked
    accepted: int = 0  # of those, the ones the model agreed with

    def on(self, m: MetricsSnapshot) -> MetricsSnapshot:
        drift = self.margin.drift
        return replace(m, draft_n=self.drafted, draft_n_accepted=self.accepted,
                       draft_drift=-1.0 if drift is None else drift)


@dataclass
class Outcome:
    reason: FinishReason = "length"
    hit: bool = False  # a stop string ended the answer
    n_answer: int = 0


def decode_speculative(
    rt: LlamaRuntime, answer: AnswerDecoder, split: AnswerSplit, clock: RequestClock, sampling: SamplingSettings,
    tokens: list[int], raw: list[bytes], cancel: threading.Event | None, bytes_per_cell: int,
    stats: DraftStats, source: DraftSource, length: DraftLength,
) -> Generator[Event, None, Outcome]:
    """The plain decode loop's steps, with greedy drafts from `source` checked in one decode each.

    `tokens` is what the KV cache holds (the prompt so far, which `source` has been given) and grows
    by each answer token that enters it, as `raw` by its bytes; on return the cache holds exactly
    `tokens`. `length` says how long a draft to ask for.
    """
    sampler, feed, eog, n_ctx, times = answer.sampler, answer.feed, rt.eog, rt.n_ctx, clock.token_times
    done = Outcome()
    ahead: list[int] = []  # tokens the model picked that are in the cache past `tokens`
    taken = 0  # of `ahead`, those handled
    next_snapshot = time.perf_counter() + SNAPSHOT_EVERY_S
    try:
        nxt = rt.sample(sampler)  # the token after the prompt
        while done.n_answer < sampling.max_tokens:
            cached = taken < len(ahead)
            if cached:
                tok = ahead[taken]
                taken += 1
            else:
                tok = nxt
            if tok in eog:
                done.reason = "stop"
                break
            now = time.perf_counter()
            times.append(now)
            done.n_answer += 1
            piece = rt.piece(tok)
            out, done.hit = feed(piece)
            yield from split.token(out, done.n_answer, now)
            if done.hit:
                done.reason = "stop"
                break
            if cancel is not None and cancel.is_set():
                done.reason = "cancelled"
                break
            if not cached:
                if len(tokens) >= n_ctx:
                    done.reason = "context_full"
                    break
                source.append(tok)
                want = min(length.want(source.kind()), sampling.max_tokens - done.n_answer, n_ctx - len(tokens) - 1,
                           rt.n_batch - 1)
                margin = stats.margin
                if want > 0 and margin.drift is None and not margin.measure(SeqZero(rt, len(tokens)), tokens,
                                                                           length.costs if length.weigh else None):
                    want = 0  # no measure of the batch's drift (a short prompt, a full context): no draft
                draft = source.draft(want) if want > 0 else []
                began = time.perf_counter()  # the source prices its own guesses (token_seconds)
                if draft and rt.decode_all([tok, *draft]) != 0:
                    _drop(rt, len(tokens))  # what a failed decode left; the token alone is tried next
                    draft = []
                if draft:
                    length.cost(1 + len(draft), time.perf_counter() - began, source.token_seconds)
                    ahead, taken = [], 0
                    nxt = _verify(rt, answer, tokens, tok, draft, ahead, stats.margin)
                    stats.drafted += len(draft)
                    stats.accepted += len(ahead)
                    length.taken(len(draft), len(ahead))
                else:
                    if rt.decode_one(tok) != 0:
                        done.reason = "context_full"
                        break
                    length.cost(1, time.perf_counter() - began)
                    if done.n_answer < sampling.max_tokens:  # the plain loop samples no further
                        nxt = rt.sample(sampler)
            else:
                source.append(tok)
            tokens.append(tok)
            raw.append(piece)
            if now >= next_snapshot:
                next_snapshot = now + SNAPSHOT_EVERY_S
                yield stats.on(clock.snapshot(len(tokens), n_ctx, bytes_per_cell, live=True))
    finally:
        if rt.kv_cells_used() > len(tokens):  # picked or drafted tokens the answer did not take
            _drop(rt, len(tokens))
    return done


def _verify(rt: LlamaRuntime, answer: AnswerDecoder, tokens: list[int], tok: int, draft: list[int],
            ahead: list[int], margin: TieMargin) -> int:
    """Check a draft decoded after `tok` (`tokens` holds neither yet): put the draft's agreed prefix
    in `ahead`, leave the cache holding tokens + tok + ahead, and return the model's next token.

    A row whose two likeliest tokens are closer than the model's margin is not trusted to the batch:
    its input is decoded again on its own, as the plain loop decodes it, and sampled from there (the
    two rows tell `margin` how far this model's batches drift)."""
    inputs = [tok, *draft]
    start = len(tokens)  # where `tok` sits in the cache
    for i in range(len(inputs)):
        best, lead = rt.top_two_at(i)
        if lead < margin.margin:
            batch_row = rt.logits_at(i)
            _drop(rt, start + i)
            if rt.decode_one(inputs[i]) != 0:  # it fitted a moment ago, in the batch
                raise EngineError("llama.cpp could not decode a token it had room for")
            margin.observe(batch_row, rt.logits_at(-1))
            return rt.sample(answer.sampler)
        if i == len(draft) or best != draft[i]:
            _drop(rt, start + 1 + i)
            return best
        ahead.append(best)
    raise AssertionError("unreachable: the last row always returns")


def _drop(rt: LlamaRuntime, keep: int) -> None:
    if not rt.kv_drop_from(keep):
        raise EngineError("llama.cpp could not drop a rejected draft from the KV cache")
