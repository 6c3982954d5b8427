"""What the batched scheduler is doing, as frozen snapshots any thread may read.

A window or a `/slots` endpoint shows them: each slot's state, tokens, KV cells and
rate, the queue, the batch's aggregate rate, so continuous batching can be seen, and the prompt cache.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal, get_args

from prefill.engine.batch.prompt_cache import PromptCacheSnapshot

SlotState = Literal["idle", "prefill", "decode"]
SLOT_STATES: tuple[SlotState, ...] = get_args(SlotState)
RATE_WINDOW_S = 2.0


@dataclass(frozen=True)
class SlotSnapshot:
    index: int
    state: SlotState
    label: str = ""  # the request in it
    prompt_tokens: int = 0
    generated: int = 0
    kv_cells: int = 0  # cells its sequence holds in llama.cpp's cache
    tps: float = 0.0  # its decode rate over the last few seconds
    drafted: int = 0  # speculative decoding: draft tokens its request had checked so far
    accepted: int = 0  # of those, the ones the model agreed with
    cached: int = 0  # of its request's prompt, the tokens reused (from the slot or the prompt cache)


@dataclass(frozen=True)
class BatchSnapshot:
    slots: tuple[SlotSnapshot, ...] = ()
    queued: int = 0
    aggregate_tps: float = 0.0  # tokens sampled per second, all slots together
    n_ctx_seq: int = 0  # context of one slot
    served: int = 0  # requests finished, failed or cancelled since start
    cancelled: int = 0  # of which cancelled (a client that went away, a stop button)
    steps: int = 0  # llama_decode calls
    peak_batch_seqs: int = 0  # most sequences in one batch so far
    peak_queued: int = 0
    speculative: str = "off"  # what the slots draft with ("ngram": the text itself)
    draft_n: int = 0  # draft tokens checked since start, all slots together
    draft_n_accepted: int = 0  # of those, accepted
    prompt_cache: PromptCacheSnapshot = field(default_factory=PromptCacheSnapshot)  # prompts that left their slot

    @property
    def busy(self) -> int:
        return sum(1 for s in self.slots if s.state != "idle")

    @property
    def in_flight(self) -> int:
        """Requests being served or waiting."""
        return self.busy + self.queued

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["busy"], d["in_flight"] = self.busy, self.in_flight
        return d


class RateMeter:
    """Events per second over a sliding window; O(1) per add, amortised."""

    def __init__(self, window_s: float = RATE_WINDOW_S):
        self.window_s = window_s
        self._marks: deque[tuple[float, int]] = deque()
        self._total = 0

    def add(self, now: float, n: int) -> None:
        self._marks.append((now, n))
        self._total += n
        self._trim(now)

    def _trim(self, now: float) -> None:
        while self._marks and self._marks[0][0] < now - self.window_s:
            self._total -= self._marks.popleft()[1]

    def rate(self, now: float) -> float:
        self._trim(now)
        if len(self._marks) < 2:
            return 0.0
        span = now - self._marks[0][0]
        # the first mark opens the window; its count happened before it
        return (self._total - self._marks[0][1]) / span if span > 0 else 0.0


def recent_rate(times: Sequence[float], now: float, window_s: float = RATE_WINDOW_S) -> float:
    """Events per second over the last `window_s`, from the sorted times of single events
    (what a RateMeter fed one event at a time reports, read from a record kept anyway)."""
    i = bisect_left(times, now - window_s)
    n = len(times) - i
    if n < 2:
        return 0.0
    span = now - times[i]
    return (n - 1) / span if span > 0 else 0.0
