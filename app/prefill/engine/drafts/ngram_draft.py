"""Drafts for speculative decoding taken from the text itself (prompt lookup, n-gram drafting).

An answer that quotes, copies or edits its prompt repeats runs of tokens it has already seen. The
index here maps every n-gram of the history (prompt and answer so far) to where its most recent
occurrence ended; the draft is what followed that occurrence. Adding a token updates the index in
O(1), and a lookup is O(1) too, so drafting costs the same at token 10 and at token 10,000.

How many of them are proposed is `DraftLength`'s to say (draft_length.py), which judges drafts by the
length of the n-gram they follow (`kind`): a long match is a passage being copied, a short one often a
common phrase. `match_prior` is what it expects of each before any is judged.
"""

from __future__ import annotations

from collections.abc import Sequence

N_MAX = 8  # the longest n-gram looked up first
N_MIN = 2  # the shortest one tried when no longer one matches


def match_prior(n: int) -> tuple[float, float]:
    """(tokens right, drafts cut short) that drafts after an n-gram match start from: p = 2/3 after a
    2-gram, 0.97 after an 8-gram. A guess, worth about as much as the drafts judged since the decay
    lets go of it (draft_length.DECAY)."""
    return n * n / 2, 1.0


class NgramIndex:
    """The token history and, for each n in N_MIN..N_MAX, n-gram -> where its last occurrence ended.

    Only n-grams that something followed are indexed: an entry's end is a position that holds a
    token, so a draft found is never empty.
    """

    token_seconds = 0.0  # a lookup costs next to nothing beside a decode
    prior = staticmethod(match_prior)  # its kinds are n-gram lengths

    def __init__(self, tokens: Sequence[int] = (), n_min: int = N_MIN, n_max: int = N_MAX):
        if not 1 <= n_min <= n_max:
            raise ValueError(f"n-gram sizes must satisfy 1 <= n_min <= n_max, not {n_min}..{n_max}")
        self.n_min, self.n_max = n_min, n_max
        self.tokens: list[int] = []
        self._ends: list[dict[tuple[int, ...], int]] = [{} for _ in range(n_max + 1)]
        self._found = (-1, -1, 0)  # (history length, n, end) of the last lookup
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def append(self, token: int) -> None:
        """Add the next token: the n-grams just before it now have a continuation."""
        h = self.tokens
        end = len(h)
        for n in range(self.n_min, min(self.n_max, end) + 1):
            self._ends[n][tuple(h[end - n : end])] = end
        h.append(token)

    def extend(self, tokens: Sequence[int]) -> None:
        for t in tokens:
            self.append(t)

    def truncate(self, n: int) -> None:
        """Keep the first `n` tokens (index entries past them are dropped)."""
        if n >= len(self.tokens):
            return
        kept = self.tokens[:n]
        self.tokens = []
        self._found = (-1, -1, 0)
        self._ends = [{} for _ in range(self.n_max + 1)]
        self.extend(kept)

    def kind(self) -> int:
        """The length of the n-gram the next draft would follow (-1: none has an earlier occurrence)."""
        return self._lookup()[0]

    def draft(self, limit: int) -> list[int]:
        """Up to `limit` tokens that followed the most recent earlier occurrence of the history's last
        n tokens (the longest n that has one); [] when none has."""
        n, end = self._lookup()
        if limit <= 0 or n < 0:
            return []
        return self.tokens[end : min(end + limit, len(self.tokens))]

    def _lookup(self) -> tuple[int, int]:
        """(n, end) of the longest n-gram match for the history's end, looked up once per token."""
        h = self.tokens
        size = len(h)
        if self._found[0] != size:
            self._found = (size, -1, 0)
            for n in range(min(self.n_max, size), self.n_min - 1, -1):
                end = self._ends[n].get(tuple(h[size - n :]))
                if end is not None:
                    self._found = (size, n, end)
                    break
        return self._found[1], self._found[2]
