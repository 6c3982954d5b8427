"""Serving figures for one request, from monotonic clocks and llama.cpp's counters."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Literal

from prefill.engine.events import FinishReason, MetricsSnapshot


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (0 when empty)."""
    if not sorted_values:
        return 0.0
    k = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


LIVE_WINDOW = 256


class RequestClock:
    """Times one request: request start, prefill, each token. Cheap per token: one append."""

    def __init__(self) -> None:
        self.t_request = time.perf_counter()
        self.t_prefill_start = self.t_request
        self.t_prefill_end = self.t_request
        self.token_times: list[float] = []
        self.reasoning_tokens = 0
        self.t_first_answer = 0.0
        self.base = MetricsSnapshot()

    @property
    def answer_ttft_ms(self) -> float:
        """From the request to the first answer token (after any thinking); 0 before it."""
        return (self.t_first_answer - self.t_request) * 1000 if self.t_first_answer else 0.0

    def snapshot(
        self, kv_used: int, kv_total: int, bytes_per_cell: int, reason: FinishReason | Literal[""] = "",
        live: bool = False
    ) -> MetricsSnapshot:
        """Figures so far. `live` takes latency percentiles over the last LIVE_WINDOW tokens only,
        so a snapshot costs the same at token 100 and at token 20,000."""
        times = self.token_times
        n = len(times)
        ttft = (times[0] - self.t_request) * 1000 if n else 0.0
        decode_tps = (n - 1) / (times[-1] - times[0]) if n > 1 and times[-1] > times[0] else 0.0
        recent = times[-LIVE_WINDOW - 1 :] if live else times
        gaps = sorted((b - a) * 1000 for a, b in zip(recent, recent[1:]))
        return replace(
            self.base,
            completion_tokens=n,
            reasoning_tokens=self.reasoning_tokens,
            ttft_ms=ttft,
            answer_ttft_ms=self.answer_ttft_ms,
            decode_tps=decode_tps,
            itl_p50_ms=percentile(gaps, 50),
            itl_p95_ms=percentile(gaps, 95),
            kv_used=kv_used,
            kv_total=kv_total,
            kv_bytes=kv_used * bytes_per_cell,
            kv_bytes_total=kv_total * bytes_per_cell,
            finish_reason=reason,
        )
