"""How long a draft to check: what a decode costs, how often drafts are right, and the length that
brings the most tokens per second.

Checking k drafted tokens costs one decode of k + 1 tokens and brings, when each drafted token is
right with probability p (given the ones before it were), 1 + p + p^2 + … + p^k tokens on average.
Two figures decide, then:

- `DecodeCosts`, what a decode of n tokens costs on this model and machine. A one-token step is a
  different kernel from a batch (a matrix-vector product, bound by memory), so it is kept apart;
  batched decodes (n >= 2) lie close to a line a + b·n, measured on this 2-core CPU with SmolLM2 as
  ~8.5 ms + 3.2 ms per token beside a 7.2 ms step. The line is fitted through the mean cost of the
  shortest and the longest batch seen, so a draft of 2 (whose first extra token is dear) does not
  price a draft of 16. It belongs to the model, not to one answer: the engine keeps it across answers.
- p, per token, as accepted / (accepted + drafts cut short), over about the last ten drafts: a
  draft of 16 whose 4th token was refused is 3 tokens right and one wrong, not 3/16 (the 12 after the
  refusal were never judged).

Where no length beats a plain step (a CPU whose batch costs nearly a step per token, or text with
nothing to copy), nothing is drafted but a one-token probe every PROBE_EVERY steps that keeps p fresh.
Until the costs are known (two batch sizes measured), lengths follow acceptance alone: doubled after
a draft taken whole, cut to what was taken after a partial one, and backed off after misses.
"""

from __future__ import annotations

DRAFT_MAX = 16  # the longest draft, unless a setting says otherwise
PROBE_EVERY = 32  # steps between drafts tried while drafting does not pay, to notice when it would
DECAY = 0.9  # how much of the acceptance figures one more draft keeps: about the last 10 drafts count
SINGLE_KEEP = 0.8  # how much of a cost's moving average one more measure keeps
SPREAD = 3  # the batch sizes the line is fitted through must differ by this many tokens


class DecodeCosts:
    """Seconds per decode on one model: a one-token step, and batches of n >= 2 by size."""

    def __init__(self) -> None:
        self.single = 0.0  # a one-token decode (a moving average; 0: not measured yet)
        self._batch: dict[int, float] = {}  # batch size -> a moving average of its cost

    def add(self, n_tokens: int, seconds: float) -> None:
        """A decode of `n_tokens` took `seconds` (1: a plain step; more: a draft checked)."""
        if n_tokens == 1:
            self.single = seconds if self.single == 0 else SINGLE_KEEP * self.single + (1 - SINGLE_KEEP) * seconds
            return
        old = self._batch.get(n_tokens)
        self._batch[n_tokens] = seconds if old is None else SINGLE_KEEP * old + (1 - SINGLE_KEEP) * seconds

    def line(self) -> tuple[float, float] | None:
        """(a, b): a batch of n tokens costs about a + b·n seconds; None until two sizes SPREAD apart
        and a plain step were measured."""
        if self.single <= 0 or not self._batch:
            return None
        low, high = min(self._batch), max(self._batch)
        if high - low < SPREAD:
            return None
        b = max(0.0, (self._batch[high] - self._batch[low]) / (high - low))
        return self._batch[low] - b * low, b


class DraftLength:
    """How many tokens to draft next, for one answer: from the acceptance so far and, when `costs`
    are known, the length that brings the most tokens per second (see the module's docstring)."""

    def __init__(self, start: int = 4, most: int = DRAFT_MAX, weigh: bool = True,
                 costs: DecodeCosts | None = None):
        """`weigh`: whether the costs decide (False: drafts as the lengths say, whatever the timing:
        what tests of exactness want, so that their draft counts do not depend on the machine).
        `costs`: the model's, kept across answers (a new one learns from this answer's decodes)."""
        self.most = most
        self.weigh = weigh
        self.costs = costs if costs is not None else DecodeCosts()
        self.n = min(start, most)
        self._skip = 0  # lookups still to skip
        self._backoff = 1  # how many the next miss skips
        self._right = 1.0  # drafted tokens accepted, and drafts cut short (decaying sums)
        self._wrong = 1.0
        self._idle = 0  # steps since the last draft while drafting does not pay

    @property
    def p(self) -> float:
        """The estimated chance that a drafted token is accepted, given the ones before it were."""
        return self._right / (self._right + self._wrong)

    def cost(self, n_tokens: int, seconds: float) -> None:
        """A decode of `n_tokens` took `seconds` (1: a plain step; more: a draft checked)."""
        if self.weigh:
            self.costs.add(n_tokens, seconds)

    def want(self) -> int:
        """The draft length to ask for now (0: do not draft this step)."""
        if self._skip > 0:
            self._skip -= 1
            return 0
        best = self._worth()
        if best > 0:
            self._idle = 0
            return best
        self._idle += 1
        if self._idle >= PROBE_EVERY:
            self._idle = 0
            return 1
        return 0

    def _worth(self) -> int:
        """The draft length that brings the most tokens per second, 0 where none beats a plain step;
        the length acceptance alone says while the costs are not known."""
        line = self.costs.line() if self.weigh else None
        if line is None:
            return self.n
        (a, b), p, gain, best = line, self.p, 1.0, 0
        best_rate = 1.0 / self.costs.single
        for k in range(1, self.most + 1):
            gain += p ** k
            rate = gain / (a + b * (k + 1))
            if rate > best_rate:
                best, best_rate = k, rate
        return best

    def taken(self, drafted: int, accepted: int) -> None:
        """The model accepted `accepted` of `drafted` tokens."""
        if drafted > 0:
            self._right = DECAY * self._right + accepted
            self._wrong = DECAY * self._wrong + (accepted < drafted)
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
