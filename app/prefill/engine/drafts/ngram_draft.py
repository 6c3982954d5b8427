"""Drafts for speculative decoding taken from the text itself (prompt lookup, n-gram drafting).

An answer that quotes, copies or edits its prompt repeats runs of tokens it has already seen. The
index here maps every n-gram of the history (prompt and answer so far) to where its most recent
occurrence ended; the draft is what followed that occurrence. Adding a token updates the index in
O(1), and a lookup is O(1) too, so drafting costs the same at token 10 and at token 10,000.

`DraftLength` adapts how many tokens are proposed (by either draft source, this one or a draft
model): longer after a draft was taken whole, shorter
after a rejection, and none for a while after repeated misses, so text with nothing to copy pays
almost nothing for it.
"""

from __future__ import annotations

from collections.abc import Sequence

N_MAX = 4  # the longest n-gram looked up first
N_MIN = 2  # the shortest one tried when no longer one matches
DRAFT_MAX = 16


class NgramIndex:
    """The token history and, for each n in N_MIN..N_MAX, n-gram -> where its last occurrence ended.

    Only n-grams that something followed are indexed: an entry's end is a position that holds a
    token, so a draft found is never empty.
    """

    def __init__(self, tokens: Sequence[int] = (), n_min: int = N_MIN, n_max: int = N_MAX):
        if not 1 <= n_min <= n_max:
            raise ValueError(f"n-gram sizes must satisfy 1 <= n_min <= n_max, not {n_min}..{n_max}")
        self.n_min, self.n_max = n_min, n_max
        self.tokens: list[int] = []
        self._ends: list[dict[tuple[int, ...], int]] = [{} for _ in range(n_max + 1)]
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
        self._ends = [{} for _ in range(self.n_max + 1)]
        self.extend(kept)

    def draft(self, limit: int) -> list[int]:
        """Up to `limit` tokens that followed the most recent earlier occurrence of the history's last
        n tokens (the longest n that has one); [] when none has."""
        h = self.tokens
        size = len(h)
        if limit <= 0:
            return []
        for n in range(min(self.n_max, size), self.n_min - 1, -1):
            end = self._ends[n].get(tuple(h[size - n :]))
            if end is not None:
                return h[end : min(end + limit, size)]
        return []


PROBE_EVERY = 32  # steps between drafts tried while drafting does not pay, to notice when it would


class DraftLength:
    """How many tokens to draft next: grows after a draft taken whole, shrinks after a rejection,
    and backs off (skips lookups) after drafts that were rejected at their first token.

    Told what decodes cost (`cost`), it also weighs a draft's price against what it is likely to
    bring: checking k drafted tokens costs one decode of k + 1 tokens and brings, with acceptance
    rate a, 1 + a + a^2 + … + a^k tokens on average. Where no k beats one token per plain step (a
    CPU whose batched decode costs nearly a step per token, or text with nothing to copy), it does
    not draft, except for a short probe every PROBE_EVERY steps that keeps the figures fresh.
    """

    def __init__(self, start: int = 4, most: int = DRAFT_MAX, weigh: bool = True):
        """`weigh`: whether the costs told decide (False: drafts as the lengths say, whatever the
        timing: what tests of exactness want, so their draft counts do not depend on the machine)."""
        self.most = most
        self.weigh = weigh
        self.n = min(start, most)
        self._skip = 0  # lookups still to skip
        self._backoff = 1  # how many the next miss skips
        self._single = 0.0  # seconds of a one-token decode (a moving average; 0: not yet measured)
        self._extra = -1.0  # seconds each further token adds to a decode (-1: not yet measured)
        self._rate = 0.5  # the share of drafted tokens accepted, a moving average
        self._idle = 0  # steps since the last draft while drafting does not pay

    def cost(self, n_tokens: int, seconds: float) -> None:
        """A decode of `n_tokens` took `seconds` (1: a plain step; more: a draft checked)."""
        if not self.weigh:
            return
        if n_tokens == 1:
            self._single = seconds if self._single == 0 else 0.8 * self._single + 0.2 * seconds
        elif self._single > 0:
            extra = max(0.0, seconds - self._single) / (n_tokens - 1)
            self._extra = extra if self._extra < 0 else 0.7 * self._extra + 0.3 * extra

    def want(self) -> int:
        """The draft length to ask for now (0: do not draft this step)."""
        if self._skip > 0:
            self._skip -= 1
            return 0
        best = self._worth(self.n)
        if best > 0:
            self._idle = 0
            return best
        self._idle += 1
        if self._idle >= PROBE_EVERY:
            self._idle = 0
            return 1
        return 0

    def _worth(self, most: int) -> int:
        """The draft length up to `most` that brings the most tokens per second, if any beats a plain
        step; `most` while the costs are not known yet."""
        if self._single <= 0 or self._extra < 0:
            return most
        a, gain, best, best_rate = self._rate, 1.0, 0, 1.0 / self._single
        for k in range(1, most + 1):
            gain += a ** k
            rate = gain / (self._single + self._extra * k)
            if rate > best_rate:
                best, best_rate = k, rate
        return best

    def taken(self, drafted: int, accepted: int) -> None:
        """The model accepted `accepted` of `drafted` tokens."""
        if drafted > 0:
            self._rate = 0.7 * self._rate + 0.3 * (accepted / drafted)
        if accepted == drafted:
            self.n = min(self.most, self.n * 2)
            self._backoff = 1
        elif accepted == 0:
            self.n = max(1, self.n // 2)
            self._skip = self._backoff
            self._backoff = min(64, self._backoff * 2)
        else:
            self.n = max(1, min(self.most, accepted + 1))
            self._backoff = 1
