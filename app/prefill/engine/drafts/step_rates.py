"""Whether the server's drafts pay, judged by what its steps realise rather than by a price list.

The server's slots share one decode, so a drafted token costs every slot the time it adds to the step,
and an accepted one saves a step for its own slot only. `draft_length.share` sizes the drafts from a
model of the costs (a + b·n per decode) and the chance each drafted token is taken; at four slots on a
CPU that model priced drafted steps better than they ran (n-gram drafts cost 0.90–0.98×). So the
scheduler also times every step whole (the draft lookups, the decode, the check, the tokens handed
out) and `StepRates` keeps what it sees:

- the plain step's time for each count of decoding rows (a moving average over steps with no draft),
  kept fresh by a probe: when the plain time for this many rows is older than PROBE_EVERY steps (or
  unknown), the next step drafts nothing;
- for each drafting request (its `DraftGate`), what its drafts realised: the tokens they added beyond
  the one a plain step gives, against the time they added to the step (the step's time past the plain
  one, shared among the step's drafts by their drafted tokens), both in moving averages.

- for each count of rows, what a drafted token adds to a step: over the last COST_WINDOW drafted steps,
  their time past plain steps' over the tokens they drafted, in plain steps (a sum over a sum, so that
  one slow step of one drafted token, a moment the machine was busy, does not set the price; and no
  price before COST_SAMPLES drafted steps). A drafted token that is always taken
  brings one token; one taken with chance p after j - 1 others brings p^j; so no draft is longer than
  the last token that brings more than rows x its cost (`longest`), and where not even a token that is
  always taken would (a CPU's compute-bound batch at several rows: `hopeless`), nothing is drafted at
  that many rows but a short cost probe (PROBE_DRAFT tokens a slot) after COST_PROBE_FIRST steps, then
  twice as long each time it confirms it, up to RETRY_MOST.

A request's drafts pay while the tokens they add per second of step they add beat the plain rate of
the whole batch (rows / plain time): (rows + gain) / (plain + cost) > rows / plain exactly then. A
request whose drafts do not pay (judged on its first FIRST_JUDGED drafted steps, then on each) stops
drafting for RETRY_FIRST steps, then tries one drafted step again, judged on its own; each failed
try doubles the wait (up to RETRY_MOST), one that pays resets it. Fewer rows than when it stopped (other
requests ended) end the wait at once: the batch its drafts delay is smaller. The batch's figures (every drafted
step's tokens per second against the plain rate at its rows) are kept for the report (`report`), with
the time of each part of a step, with and without drafts.

Steps that carry a prompt chunk are neither plain nor drafted here (a prompt's chunk is a larger
kernel's work); the scheduler does not pass them in.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from prefill.engine.drafts.draft_length import PROBE_EVERY

PLAIN_KEEP = 0.8  # how much of the plain step's moving average one more plain step keeps
GATE_KEEP = 0.6  # how much of a request's realised gain and cost one more drafted step keeps
RETRY_FIRST = 16  # steps a request whose drafts do not pay waits before it tries one again
RETRY_MOST = 512  # the longest wait, after failed tries doubled it
FIRST_JUDGED = 2  # drafted steps a request's drafts are judged on before they may first be stopped (one try after)
# Drafts must realise this much more than the plain rate to go on: the plain time is a moving average
# whose noise a drafted step's is measured against.
MARGIN = 0.02
COST_WINDOW = 8  # the drafted steps a drafted token's price is taken over
COST_SAMPLES = 2  # drafted steps measured before a drafted token has a price
COST_PROBE_FIRST = 32  # steps at a hopeless count of rows before a drafted step measures the cost again
PROBE_DRAFT = 4  # the longest draft of a slot in such a cost probe
PARTS = ("build", "draft", "events", "decode", "take")  # a step's parts, in order (see `StepRates.report`)


@dataclass
class DraftGate:
    """One request's drafts as the step rates judge them."""

    gain: float = 0.0  # tokens its drafted steps added beyond a plain step's one (moving average)
    cost: float = 0.0  # seconds those steps added for its drafts, in plain steps of the same rows
    judged: int = 0  # drafted steps judged since it last (re)started
    resume_at: int = 0  # the step from which it may draft again
    rows: int = 0  # the decoding rows of the step that stopped it (fewer rows: a plain step brings less)
    wait: int = RETRY_FIRST  # how long the next stop lasts
    stops: int = 0  # times its drafts were found not to pay

    def pays(self, rows: int) -> bool:
        """Whether the tokens its drafts add per plain step they cost beat what a plain step brings
        (`rows` tokens)."""
        return self.gain > rows * self.cost * (1 + MARGIN) if self.cost > 0 else self.gain >= 0


@dataclass
class _Totals:
    steps: int = 0
    rows: int = 0  # decoding rows, summed over the steps
    tokens: int = 0  # tokens handed out
    seconds: float = 0.0
    plain_seconds: float = 0.0  # what the same steps would have taken without drafts (drafted steps only)
    drafted: int = 0  # drafted tokens checked
    parts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))


class StepRates:
    """The realised rates of the server's steps, with drafts and without, and each drafting request's
    verdict. Used by the scheduler's thread only."""

    def __init__(self) -> None:
        self._plain: dict[int, tuple[float, int]] = {}  # rows -> (moving average seconds, step measured at)
        self._costs: dict[int, deque[tuple[float, int]]] = {}  # rows -> the last drafted steps' (extra, drafted)
        self._cost_probe: dict[int, tuple[int, int]] = {}  # hopeless rows -> (step of the next cost probe, wait)
        self.plain_totals = _Totals()
        self.drafted_totals = _Totals()

    def plain_time(self, rows: int) -> float:
        """A plain step's seconds at `rows` decoding rows (0: not measured yet)."""
        found = self._plain.get(rows)
        return found[0] if found is not None else 0.0

    def probe_due(self, rows: int, step: int) -> bool:
        """Whether this step at `rows` decoding rows drafts nothing, so that the plain time stays known:
        it is unknown, or older than PROBE_EVERY steps."""
        found = self._plain.get(rows)
        return found is None or step - found[1] >= PROBE_EVERY

    def token_cost(self, rows: int) -> float | None:
        """What a drafted token adds to a step of `rows` decoding rows, in plain steps (None: not measured
        on COST_SAMPLES drafted steps yet)."""
        found = self._costs.get(rows)
        if found is None or len(found) < COST_SAMPLES:
            return None
        return sum(e for e, _ in found) / sum(n for _, n in found)

    def hopeless(self, rows: int) -> bool:
        """Whether at `rows` decoding rows not even a drafted token that is always taken pays."""
        return self.longest(rows, 1.0) == 0

    def cost_probe_due(self, rows: int, step: int) -> bool:
        """Whether this step at hopeless `rows` drafts (PROBE_DRAFT tokens a slot at most) to measure the cost
        of a drafted token again."""
        found = self._cost_probe.get(rows)
        return found is not None and step >= found[0]

    def longest(self, rows: int, p: float) -> int | None:
        """The longest draft whose last token, taken with chance `p` given the ones before it, brings more
        than its measured cost at `rows` decoding rows (None: not measured, or no bound)."""
        cost = self.token_cost(rows)
        if cost is None:
            return None
        need = rows * cost * (1 + MARGIN)  # the tokens a drafted token must bring to pay for itself
        if need <= 0 or p >= 1 and need < 1:
            return None
        if need >= 1 or p <= 0:
            return 0
        return max(0, math.ceil(math.log(need) / math.log(p)) - 1)  # the largest j with p^j > need

    @staticmethod
    def may_draft(gate: DraftGate, step: int, rows: int) -> bool:
        """Whether a request may draft at `step`, among `rows` decoding rows: its wait is over, or fewer
        rows decode than when its drafts were stopped (each drafted token costs fewer slots then)."""
        return step >= gate.resume_at or rows < gate.rows

    def plain(self, rows: int, tokens: int, seconds: float, step: int, parts: dict[str, float] | None = None) -> None:
        """A step of `rows` decoding rows with no draft handed out `tokens` in `seconds`."""
        found = self._plain.get(rows)
        avg = seconds if found is None else PLAIN_KEEP * found[0] + (1 - PLAIN_KEEP) * seconds
        self._plain[rows] = (avg, step)
        self._add(self.plain_totals, rows, tokens, seconds, 0.0, 0, parts)

    def drafted(self, rows: int, tokens: int, seconds: float, step: int,
                drafts: list[tuple[DraftGate, int, int]], parts: dict[str, float] | None = None) -> None:
        """A step of `rows` decoding rows handed out `tokens` in `seconds`, with drafts: for each drafting
        request, (its gate, tokens drafted, tokens it got). Each gate learns what its drafts realised, and
        one whose drafts do not pay stops drafting for a while."""
        base = self.plain_time(rows)
        if base <= 0:  # no plain step to compare with yet (probe_due makes one first)
            return
        drafted = sum(d for _, d, _ in drafts)
        self._add(self.drafted_totals, rows, tokens, seconds, base, drafted, parts)
        extra = (seconds - base) / base  # in plain steps of these rows
        if drafted > 0:
            self._learn_cost(rows, extra, drafted, step)
        for gate, n, got in drafts:
            if n <= 0:
                continue
            gain, cost = got - 1, extra * n / drafted
            if gate.judged == 0:
                gate.gain, gate.cost = gain, cost
            else:
                gate.gain = GATE_KEEP * gate.gain + (1 - GATE_KEEP) * gain
                gate.cost = GATE_KEEP * gate.cost + (1 - GATE_KEEP) * cost
            gate.judged += 1
            if gate.pays(rows):
                gate.wait = RETRY_FIRST
            elif gate.stops or gate.judged >= FIRST_JUDGED:
                gate.stops += 1
                gate.resume_at, gate.rows = step + gate.wait, rows
                gate.wait = min(RETRY_MOST, 2 * gate.wait)
                gate.judged = 0  # its next try is judged on its own

    def _learn_cost(self, rows: int, extra: float, drafted: int, step: int) -> None:
        self._costs.setdefault(rows, deque(maxlen=COST_WINDOW)).append((extra, drafted))
        if self.hopeless(rows):
            wait = self._cost_probe[rows][1] * 2 if rows in self._cost_probe else COST_PROBE_FIRST
            self._cost_probe[rows] = (step + min(wait, RETRY_MOST), min(wait, RETRY_MOST))
        else:
            self._cost_probe.pop(rows, None)

    @staticmethod
    def _add(t: _Totals, rows: int, tokens: int, seconds: float, base: float, drafted: int,
             parts: dict[str, float] | None) -> None:
        t.steps += 1
        t.rows += rows
        t.tokens += tokens
        t.seconds += seconds
        t.plain_seconds += base
        t.drafted += drafted
        if parts:
            for k, v in parts.items():
                t.parts[k] += v

    def drafted_over_plain(self) -> float:
        """The drafted steps' realised rate over the rate plain steps of the same rows would have had
        (tokens per second, 1.0: as fast; 0 before any drafted step)."""
        t = self.drafted_totals
        if t.seconds <= 0 or t.plain_seconds <= 0:
            return 0.0
        return (t.tokens / t.seconds) / (t.rows / t.plain_seconds)

    def overall_over_plain(self) -> float:
        """Every priced step's realised rate, drafted or not, over the rate plain steps of the same rows
        would have had: what drafting did to the run (1.0: nothing; 0 before any step)."""
        p, d = self.plain_totals, self.drafted_totals
        seconds, plain_seconds = p.seconds + d.seconds, p.seconds + d.plain_seconds
        if seconds <= 0 or plain_seconds <= 0:
            return 0.0
        return ((p.tokens + d.tokens) / seconds) / ((p.rows + d.rows) / plain_seconds)

    def report(self) -> dict[str, object]:
        """What the steps realised, plain and drafted: counts, tokens per second, and the milliseconds each
        part of a step took on average (build: the batch's rows; draft: the drafts looked up and added;
        events: the previous step's events handed to the server's streams; decode: llama_decode; take:
        sampling, checking the drafts, dropping the rejected cells, handing out the tokens)."""
        out: dict[str, object] = {}
        for name, t in (("plain", self.plain_totals), ("drafted", self.drafted_totals)):
            steps = max(1, t.steps)
            out[name] = {
                "steps": t.steps, "rows_per_step": round(t.rows / steps, 2),
                "tokens_per_step": round(t.tokens / steps, 2), "drafted_per_step": round(t.drafted / steps, 2),
                "tps": round(t.tokens / t.seconds, 1) if t.seconds > 0 else 0.0,
                "ms_per_step": round(t.seconds / steps * 1000, 2),
                "ms_by_part": {k: round(v / steps * 1000, 3) for k, v in t.parts.items()},
            }
        out["drafted_over_plain"] = round(self.drafted_over_plain(), 3)
        out["overall_over_plain"] = round(self.overall_over_plain(), 3)
        return out
