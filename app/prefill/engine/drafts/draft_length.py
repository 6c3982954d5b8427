"""How long a draft to check: what a decode costs, how often drafts are right, and the length that
brings the most tokens per second.

Checking k drafted tokens costs one decode of k + 1 tokens and brings, when each drafted token is
right with probability p (given the ones before it were), 1 + p + p^2 + … + p^k tokens on average.
Two figures decide, then:

- `DecodeCosts`, what a decode of n tokens costs on this model and machine. A one-token step is a
  different kernel from a batch (a matrix-vector product, bound by memory), so it is kept apart;
  batched decodes (n >= 2) lie close to a line a + b·n (benchmarks/speculative_bench.py prints a
  machine's). The line is a least-squares fit through every
  batch size seen (each size's moving average once): through the shortest and longest alone, one
  noisy decode of either moved every price. It belongs to the model, not to one answer: the engine
  keeps it across answers.
- p, per token, as accepted / (accepted + drafts cut short), over about the last ten drafts: a
  draft of 16 whose 4th token was refused is 3 tokens right and one wrong, not 3/16 (the 12 after the
  refusal were never judged). It is kept apart for each kind of draft a source makes (an n-gram
  source's kinds are the lengths of the n-gram matched: drafts after a long match are right far more
  often than after a short one), each starting from the source's prior for that kind, which the
  decay lets go of as drafts are judged. The chat engine keeps these figures across answers, as it
  keeps the costs: they belong to the source and the model more than to one answer.

Where no length beats a plain step (a CPU whose batch costs nearly a step per token, or text with
nothing to copy), nothing is drafted but a probe every PROBE_EVERY steps that keeps p fresh, as long
as acceptance alone would draft (so that a price measured in a slow moment is measured again: long
drafts that looked dear would otherwise never be tried, nor priced, again);
where not even drafts that are always right would pay (a draft model as dear as the main one, whose
every probe must first catch up on the text), nothing at all.
Until the costs are known (two batch sizes measured), lengths follow acceptance alone: doubled after
a draft taken whole, cut to what was taken after a partial one, and backed off after misses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prefill.engine.speculation import DRAFT_MAX

PROBE_EVERY = 32  # steps between drafts tried while drafting does not pay, to notice when it would
DECAY = 0.9  # how much of the acceptance figures one more draft keeps: about the last 10 drafts count
SINGLE_KEEP = 0.8  # how much of a cost's moving average one more measure keeps
SPREAD = 3  # the batch sizes the line is fitted through must differ by this many tokens
# Drafts must promise this much more than the same decode without them: what the costs leave out (checking
# the rows, dropping rejected cells, a near tie's plain step) and their own noise. Four server slots at one
# thread, priced 6% better with drafts than without, ran 3-6% slower.
MARGIN = 0.1
Prior = Callable[[int], tuple[float, float]]  # a kind of draft -> (tokens right, drafts cut short) to start from


def flat_prior(kind: int) -> tuple[float, float]:
    """No kind of draft is expected to do better than another: p starts at 1/2."""
    return 1.0, 1.0


class DecodeCosts:
    """Seconds per decode on one model: a one-token step, and batches of n >= 2 by size."""

    def __init__(self) -> None:
        self.single = 0.0  # a one-token decode (a moving average; 0: not measured yet)
        self._batch: dict[int, float] = {}  # batch size -> a moving average of its cost
        self._line: tuple[float, float] | None = None  # fitted when first asked for after a batch was added
        self._fitted = True

    def add(self, n_tokens: int, seconds: float) -> None:
        """A decode of `n_tokens` took `seconds` (1: a plain step; more: a draft checked)."""
        if n_tokens == 1:
            self.single = seconds if self.single == 0 else SINGLE_KEEP * self.single + (1 - SINGLE_KEEP) * seconds
            return
        old = self._batch.get(n_tokens)
        self._batch[n_tokens] = seconds if old is None else SINGLE_KEEP * old + (1 - SINGLE_KEEP) * seconds
        self._fitted = False

    def line(self) -> tuple[float, float] | None:
        """(a, b): a batch of n tokens costs about a + b·n seconds, fitted by least squares through
        every batch size measured, each size once (so the many short batches of a cautious start do
        not outweigh the long ones); None until two sizes SPREAD apart were measured. Fitted once per
        batch measured: a step asks for it several times (share, plain, the probe's check)."""
        if not self._fitted:
            self._line, self._fitted = self._fit(), True
        return self._line

    def _fit(self) -> tuple[float, float] | None:
        sizes = self._batch
        if len(sizes) < 2 or max(sizes) - min(sizes) < SPREAD:
            return None
        mean_n = sum(sizes) / len(sizes)
        mean_s = sum(sizes.values()) / len(sizes)
        spread = sum((n - mean_n) ** 2 for n in sizes)
        b = max(0.0, sum((n - mean_n) * (s - mean_s) for n, s in sizes.items()) / spread)
        return mean_s - b * mean_n, b

    def plain(self, n_tokens: int) -> float:
        """What a decode of `n_tokens` with no draft costs (0: not known yet): as measured where that
        size was decoded, else from the line (which long drafts can tilt: a server's plain four-slot
        step was priced 67 ms from drafted steps of 14 to 61 tokens, and took 46)."""
        if n_tokens == 1:
            return self.single
        if n_tokens in self._batch:
            return self._batch[n_tokens]
        line = self.line()
        return line[0] + line[1] * n_tokens if line is not None else 0.0


def share(costs: DecodeCosts, base: int, asks: Sequence[tuple[float, int]], room: int,
          guess: float = 0.0) -> list[int] | None:
    """How many tokens each of several drafts should hold to bring the most tokens per second to one
    decode that evaluates `base` tokens anyway (a slot's next token each, prompt chunks). Each ask
    is (p, the longest draft it may have); `room` bounds the drafts together. None until the costs
    are known.

    A drafted token costs b (the line's slope) and `guess` (what guessing it costs the source, a draft
    model's decode), and brings p^j tokens when it is its draft's j-th:
    tokens are added best first while each brings more than the decode's tokens per second so far,
    and the drafts are kept only if the decode then beats the same decode without them by MARGIN
    (for one token, a plain step: a different kernel, so the first drafted token is dear).
    """
    line, plain = costs.line(), costs.plain(base)
    if line is None or plain <= 0:
        return None
    a, b = line
    per_token = b + guess
    lengths = [0] * len(asks)
    gain, cost = float(base), a + b * base
    while room > 0:
        i = max(range(len(asks)), key=lambda i: asks[i][0] ** (lengths[i] + 1) if lengths[i] < asks[i][1] else -1.0,
                default=-1)
        if i < 0 or lengths[i] >= asks[i][1]:
            break
        brings = asks[i][0] ** (lengths[i] + 1)
        if brings * cost <= per_token * gain:  # brings / per_token <= gain / cost, without dividing by 0
            break
        lengths[i] += 1
        gain, cost, room = gain + brings, cost + per_token, room - 1
    if gain * plain <= base * cost * (1 + MARGIN):  # not clearly better than the decode without drafts
        return [0] * len(asks)
    return lengths


class DraftLength:
    """How many tokens to draft next, for one answer: from the acceptance so far and, when `costs`
    are known, the length that brings the most tokens per second (see the module's docstring)."""

    def __init__(self, start: int = 4, most: int = DRAFT_MAX, weigh: bool = True,
                 costs: DecodeCosts | None = None, prior: Prior = flat_prior, guess: float = 0.0,
                 judged: dict[int, list[float]] | None = None):
        """`weigh`: whether the costs decide (False: drafts as the lengths say, whatever the timing:
        what tests of exactness want, so that their draft counts do not depend on the machine).
        `costs`: the model's, kept across answers (a new one learns from this answer's decodes).
        `prior`: what each kind of draft's acceptance starts from. `guess`: what guessing a drafted
        token costs the source, as far as it knows (0: a lookup, or not measured yet). `judged`: the
        acceptance so far by kind, where it is kept across answers (the same source on the same model)."""
        self.most = most
        self.weigh = weigh
        self.costs = costs if costs is not None else DecodeCosts()
        self.n = min(start, most)
        self._prior = prior
        self.guess = guess
        self._skip = 0  # lookups still to skip
        self._backoff = 1  # how many the next miss skips
        # kind -> [tokens accepted, drafts cut short] (decaying sums)
        self._judged: dict[int, list[float]] = judged if judged is not None else {}
        self.kind = 0  # of the draft asked for last
        self._idle = 0  # steps since the last draft while drafting does not pay

    @property
    def p(self) -> float:
        """The estimated chance that a drafted token of the current kind is accepted, given the ones
        before it were."""
        return self.chance(self.kind)

    def chance(self, kind: int) -> float:
        """The estimated chance that a drafted token of `kind` is accepted, given the ones before it were."""
        right, wrong = self._counts(kind)
        return right / (right + wrong)

    def _counts(self, kind: int) -> list[float]:
        counts = self._judged.get(kind)
        if counts is None:
            counts = self._judged[kind] = list(self._prior(kind))
        return counts

    def cost(self, n_tokens: int, seconds: float, guess: float | None = None) -> None:
        """A decode of `n_tokens` took `seconds` (1: a plain step; more: a draft checked), and guessing
        a drafted token now costs the source `guess` seconds (None: as it did)."""
        if self.weigh:
            self.costs.add(n_tokens, seconds)
            if guess is not None:
                self.guess = guess

    def want(self, kind: int = 0, worth: int | None = None) -> int:
        """The draft length to ask for now, for a draft of `kind` (-1: the source has none to
        offer); 0: do not draft this step. `worth`: the length the costs give it where it shares a
        decode with others (`share`); None: worked out here."""
        if kind < 0:
            return 0
        self.kind = kind
        if self._skip > 0:
            self._skip -= 1
            return 0
        best = self._worth() if worth is None else worth
        if best > 0:
            self._idle = 0
            return best
        self._idle += 1
        if self._idle >= PROBE_EVERY and not self._hopeless():
            self._idle = 0
            return self.n  # as long as acceptance alone says: a long draft's price is measured again too
        return 0

    def _hopeless(self) -> bool:
        """Whether drafts would not pay even if every drafted token were taken (a draft model whose
        guesses cost about what a step does, batches that cost a step per token): no probe either."""
        return self.weigh and share(self.costs, 1, [(1.0, self.most)], self.most, self.guess) == [0]

    def _worth(self) -> int:
        """The draft length that brings the most tokens per second, 0 where none beats a plain step;
        the length acceptance alone says while the costs are not known."""
        lengths = share(self.costs, 1, [(self.p, self.most)], self.most, self.guess) if self.weigh else None
        return self.n if lengths is None else lengths[0]

    def taken(self, drafted: int, accepted: int) -> None:
        """The model accepted `accepted` of `drafted` tokens of the draft asked for last."""
        if drafted > 0:
            counts = self._counts(self.kind)
            counts[0] = DECAY * counts[0] + accepted
            counts[1] = DECAY * counts[1] + (accepted < drafted)
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
