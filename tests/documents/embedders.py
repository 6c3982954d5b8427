"""A deterministic embedder for fast tests: words hashed into a bag-of-words vector (no model)."""

from __future__ import annotations

import hashlib
import re

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Each word adds 1 at a place its hash picks; texts sharing words point the same way."""

    def __init__(self, n_embd: int = 128, model_id: str = "test-hash-128"):
        self.n_embd = n_embd
        self.model_id = model_id
        self.calls = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        out = []
        for t in texts:
            v = [0.0] * self.n_embd
            for w in _WORD.findall(t.lower()):
                v[int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little") % self.n_embd] += 1.0
            out.append(v)
        return out


def count_words(text: str) -> int:
    """A token counter for tests: one token a word."""
    return len(text.split())
