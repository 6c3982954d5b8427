"""A small model beside the main one that guesses the main model's next tokens (a draft model).

The draft model is a second `LlamaRuntime` with its own KV cache, loaded with the main model's
context size and offload settings, used on the same (engine) thread. For each answer it is a
draft source for `speculative.decode_speculative`: it is told every token the main model takes
(`append`), and asked for up to `limit` tokens at a time (`draft`), which it writes greedily, one
decode each, stopping early where its own top probability falls under `p_min` (llama.cpp's
`--draft-p-min`: an unsure guess costs a decode and is likely rejected anyway).

Its cache follows the accepted text lazily: before drafting, the cells past the longest common
prefix of what it holds and the text (a rejected draft, or a previous conversation) are dropped,
and only the tokens it lacks are decoded. Across turns this is the same prefix reuse the main
model's cache gets.

A draft model must share the main model's tokenizer; the check and the loader are the server's too
(engine/drafts/draft_check.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from prefill.engine.drafts.draft_check import P_MIN, load_draft
from prefill.engine.drafts.draft_length import flat_prior
from prefill.engine.errors import EngineError
from prefill.engine.llama.runtime import LlamaRuntime


class DraftModel:
    """A loaded draft model and the tokens its KV cache holds. One thread uses it at a time.

    Attributes:
        path: the GGUF file.
        runtime: its llama.cpp model and context.
        p_min: a guess less likely than this (by the draft model's own softmax) ends a draft.
    """

    def __init__(self, path: Path, runtime: LlamaRuntime, bytes_per_cell: int, main_vocab: int):
        self.path = path
        self.runtime = runtime
        self.bytes_per_cell = bytes_per_cell
        self.p_min = P_MIN
        self._main_vocab = main_vocab  # a guess past the main model's vocabulary is never proposed
        self._cached: list[int] = []  # exactly what is in the draft model's KV cache
        self._text: list[int] = []  # the accepted text of this answer: the main model's tokens
        self._same = 0  # a prefix of `_cached` and `_text` known to agree
        self._cancel: threading.Event | None = None
        self.decoded = 0  # tokens decoded into it so far, drafts included (what keeping in step costs)
        self.token_seconds = 0.0  # what guessing one more token costs it (a moving average of its decodes)

    @classmethod
    def load(cls, path: str | Path, main: LlamaRuntime) -> DraftModel:
        """Check and load `path` beside `main`, with its context size and offload settings.

        Raises:
            DraftModelError: the file is missing or not a model llama.cpp loads, or its vocabulary
                is not the main model's (the message says what differs).
        """
        p = Path(path)
        runtime, bytes_per_cell = load_draft(p, main, replace(main.settings, n_ctx=main.n_ctx), LlamaRuntime)
        return cls(p, runtime, bytes_per_cell, main.n_vocab)

    @property
    def memory_bytes(self) -> int:
        """Its weights and a KV cache of its whole context: what it adds to the main model's memory."""
        return self.runtime.model_bytes() + self.runtime.n_ctx * self.bytes_per_cell

    @property
    def cached_tokens(self) -> list[int]:
        return list(self._cached)

    def close(self) -> None:
        self.runtime.close()
        self._cached.clear()
        self._same = 0

    # --- a draft source for one answer ----------------------------------------------------
    def begin(self, tokens: Sequence[int], cancel: threading.Event | None = None) -> DraftModel:
        """Start an answer whose text so far (the prompt in the main model's cache) is `tokens`;
        `cancel` stops bringing the cache up to date. Returns itself, the answer's draft source."""
        self._text = list(tokens)
        self._cancel = cancel
        self._same = 0  # the first draft's _sync finds how much of the cache the text still agrees with
        return self

    def append(self, token: int) -> None:
        """The main model took `token`."""
        self._text.append(token)

    def kind(self) -> int:
        """Its drafts are of one kind: how sure the draft model is ends each of them (p_min)."""
        return 0

    def prior(self, kind: int) -> tuple[float, float]:
        return flat_prior(kind)

    def draft(self, limit: int) -> list[int]:
        """Up to `limit` tokens the draft model expects next, greedily, while it is sure enough."""
        if limit <= 0 or not self._sync():
            return []
        rt, out, began, guessed = self.runtime, [], time.perf_counter(), 0
        while True:
            tok, p = rt.top_prob()
            if p < self.p_min or tok >= self._main_vocab:
                break
            out.append(tok)
            if len(out) >= limit or tok in rt.eog or rt.decode_one(tok) != 0:
                break
            self._cached.append(tok)
            self.decoded += 1
            guessed += 1
        if guessed:  # what one more guessed token costs; catching up (mostly the prompt, once) is not
            per = (time.perf_counter() - began) / guessed
            self.token_seconds = per if self.token_seconds == 0 else 0.8 * self.token_seconds + 0.2 * per
        return out

    def _sync(self) -> bool:
        """Make the cache hold the text and leave the logits of its last token; False when it cannot."""
        text, cached, rt = self._text, self._cached, self.runtime
        same, limit = self._same, min(len(cached), len(text))
        while same < limit and cached[same] == text[same]:
            same += 1
        keep = min(same, len(text) - 1)  # the last token is decoded again for its logits if need be
        if keep < 0:
            return False
        if keep < len(cached):
            if not rt.kv_truncate(keep):  # a sliding window let go of what the prefix needs: all again
                keep = 0
            del cached[keep:]
        self._same = keep
        todo = text[keep:]
        if any(t >= rt.n_vocab for t in todo):  # a token the draft's vocabulary lacks: no guesses
            return False
        for i in range(0, len(todo), rt.n_batch):
            if self._cancel is not None and self._cancel.is_set():
                return False
            chunk = todo[i : i + rt.n_batch]
            try:
                rt.decode(chunk)
            except EngineError:  # its cache is full: start again from nothing next time
                rt.kv_truncate(0)
                cached.clear()
                self._same = 0
                return False
            cached.extend(chunk)
            self._same = len(cached)
            self.decoded += len(chunk)
        return True
