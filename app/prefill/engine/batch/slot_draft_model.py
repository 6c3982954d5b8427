"""A draft model for the server's slots: one small model, one context, one sequence per slot.

The draft model is a `BatchRuntime` of its own with as many sequences as the main model has slots
and the same context per sequence, loaded and checked by the door the chat engine's draft model
goes through (engine/drafts/draft_check.py). It is a `SlotDraftSource`: once a step, the scheduler
asks it for a draft for every greedy slot that wants one, and it writes them together, one token
per slot per `llama_decode` (a step drafting k tokens for four slots costs k small decodes, not 4k),
greedily, each slot stopping early where the draft's own top probability falls under `p_min`
(llama.cpp's `--draft-p-min`).

Each sequence follows its slot's accepted text lazily, as the chat engine's draft model does: before
drafting, the cells past the longest common prefix of what it holds and the text (a rejected draft,
or the previous request of that slot) are dropped, and only the tokens it lacks are decoded. A slot
that takes a request continuing its last conversation so reuses the draft's cache as the main
model's cache is reused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prefill.engine.batch.runtime import BatchRuntime, TokenBatch
from prefill.engine.batch.slot_drafts import History
from prefill.engine.drafts.draft_check import P_MIN, load_draft
from prefill.engine.drafts.draft_length import flat_prior
from prefill.engine.settings import LoadSettings

ALONGSIDE = 16  # text a sequence lacks, up to this many tokens, is decoded in the first drafting round


class TextSoFar(list[int]):
    """A request's tokens so far: a list that a draft model's sequence is kept in step with."""

    def kind(self) -> int:
        """A draft model's drafts are of one kind (how sure it is ends each of them)."""
        return 0


@dataclass(eq=False)
class _Seq:
    cached: list[int] = field(default_factory=list)  # exactly what this sequence's cells hold
    text: TextSoFar | None = None  # the request it last drafted for
    same: int = 0  # a prefix of `cached` and `text` known to agree


@dataclass
class _Drafting:
    ask: int  # index into the asks
    seq: int
    token: int  # the next input
    pos: int
    limit: int
    before: list[int] = field(default_factory=list)  # text the sequence lacks before `token`, fed with it


class SlotDraftModel:
    """A loaded draft model for every slot of one `BatchRuntime`. Used by the scheduler thread only.

    Attributes:
        path: the GGUF file.
        runtime: its llama.cpp model and context (n_seq sequences).
        p_min: a guess less likely than this (by the draft model's own softmax) ends that slot's draft.
        decoded: tokens decoded into it so far, drafts included (what keeping in step costs).
    """

    def __init__(self, path: Path, runtime: BatchRuntime, bytes_per_cell: int, main_vocab: int):
        self.path = path
        self.runtime = runtime
        self.bytes_per_cell = bytes_per_cell
        self.p_min = P_MIN
        self.decoded = 0
        self._main_vocab = main_vocab  # a guess past the main model's vocabulary is never proposed
        self._seqs = [_Seq() for _ in range(runtime.n_seq)]
        self._batch = TokenBatch(runtime.n_batch, runtime.n_seq)  # a drafting round: every slot's next input
        self._alone = TokenBatch(runtime.n_batch, runtime.n_seq)  # text one sequence lacks, fed on its own

    @classmethod
    def load(cls, path: str | Path, main: BatchRuntime) -> SlotDraftModel:
        """Check and load `path` beside `main`: its slots, context per slot and offload settings.

        Raises:
            DraftModelError: the file is missing or not a model llama.cpp loads, or its vocabulary
                is not the main model's (the message says what differs).
        """
        n_seq = main.n_seq

        def make(p: Path, settings: LoadSettings, layers: int, n_layer: int) -> BatchRuntime:
            return BatchRuntime(p, settings, n_seq, layers, n_layer)

        p = Path(path)
        runtime, bytes_per_cell = load_draft(p, main, main.settings, make)
        return cls(p, runtime, bytes_per_cell, main.n_vocab)

    @property
    def memory_bytes(self) -> int:
        """Its weights and the KV cache of every sequence: what it adds to the server's memory."""
        return self.runtime.model_bytes() + self.runtime.n_ctx * self.bytes_per_cell

    def cached_tokens(self, seq: int) -> list[int]:
        return list(self._seqs[seq].cached)

    def close(self) -> None:
        self.runtime.close()
        self._seqs = [_Seq() for _ in self._seqs]

    # --- a SlotDraftSource ---------------------------------------------------------------------
    def prior(self, kind: int) -> tuple[float, float]:
        return flat_prior(kind)

    def history(self, prompt: Sequence[int]) -> History:
        return TextSoFar(prompt)

    def draft_all(self, asks: Sequence[tuple[int, History, int]]) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in asks]
        drafting = [d for i, (seq, text, limit) in enumerate(asks)
                    if isinstance(text, TextSoFar) and limit > 0 and (d := self._catch_up(i, seq, text, limit))]
        rt, batch = self.runtime, self._batch
        while drafting:
            batch.clear()
            rows = []
            for d in drafting:
                if d.before:  # the first round: the text a sequence lacks goes in the same decode
                    if batch.room <= len(d.before) and not self._feed(d.seq, d.before):
                        continue
                    if d.before:
                        batch.add(d.before, d.pos - len(d.before), d.seq, False)
                rows.append(batch.add_one(d.token, d.pos, d.seq))
            drafting = [d for d in drafting if self._seqs[d.seq].text is not None]
            if rt.decode_batch(batch) != 0:  # out of cells: these sequences start afresh next time
                for d in drafting:
                    self._forget(d.seq)
                break
            self.decoded += len(drafting)
            going = []
            for d, row in zip(drafting, rows, strict=True):
                self._seqs[d.seq].cached.extend((*d.before, d.token))
                self.decoded += len(d.before)
                d.before = []
                tok, p = rt.top_prob_at(row)
                if p < self.p_min or tok >= self._main_vocab:
                    continue
                guess = out[d.ask]
                guess.append(tok)
                if len(guess) < d.limit and tok not in rt.eog:
                    going.append(_Drafting(d.ask, d.seq, tok, d.pos + 1, d.limit))
            drafting = going
        return out

    def _catch_up(self, ask: int, seq: int, text: TextSoFar, limit: int) -> _Drafting | None:
        """Make sequence `seq` hold all of `text` but its last token, which is returned as the first
        input of the draft; None when it cannot draft for this text."""
        s, rt = self._seqs[seq], self.runtime
        same = s.same if s.text is text else 0  # another request's text is compared from the start
        cached, n = s.cached, min(len(s.cached), len(text))
        while same < n and cached[same] == text[same]:
            same += 1
        keep = min(same, len(text) - 1)
        if keep < 0:
            return None
        if keep < len(cached):
            keep = rt.seq_truncate(seq, keep)
            del cached[keep:]
        s.text, s.same = text, keep
        todo = text[keep:]
        if any(t >= rt.n_vocab for t in todo):  # a token the draft's vocabulary lacks: no guesses
            return None
        s.same = len(text) - 1
        split = max(0, len(todo) - 1 - ALONGSIDE)  # a long catch-up (a new prompt) is decoded first, alone
        if split and not self._feed(seq, todo[:split]):
            return None
        return _Drafting(ask, seq, text[-1], len(text) - 1, limit, todo[split:-1])

    def _feed(self, seq: int, tokens: list[int]) -> bool:
        """Decode `tokens` into sequence `seq` alone, in chunks, keeping no logits, and take them from the front
        of the list; False (the sequence forgotten) when llama.cpp could not."""
        rt, batch, cached = self.runtime, self._alone, self._seqs[seq].cached
        while tokens:
            chunk = tokens[: rt.n_batch]
            batch.clear()
            batch.add(chunk, len(cached), seq, False)
            if rt.decode_batch(batch) != 0:
                self._forget(seq)
                return False
            cached.extend(chunk)
            self.decoded += len(chunk)
            del tokens[: len(chunk)]
        return True

    def _forget(self, seq: int) -> None:
        self.runtime.seq_truncate(seq, 0)
        self._seqs[seq] = _Seq()
