"""What a load and a generation take: typed, validated, frozen."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal, Union

GpuLayers = Union[int, Literal["all", "none", "auto"]]
OVERFLOW_POLICIES = ("stop", "truncate_middle", "rolling_window")
KV_TYPES = ("f16", "q8_0", "q4_0")


@dataclass(frozen=True)
class LoadSettings:
    """How to load a model. `n_gpu_layers`: "all", "none", "auto" (as many as fit) or a count."""

    n_ctx: int = 4096
    n_gpu_layers: GpuLayers = "auto"
    flash_attn: bool = False
    kv_type: str = "f16"
    n_threads: int = 0  # 0: automatic, see `threads`
    n_batch: int = 512

    def __post_init__(self) -> None:
        if self.n_ctx < 16:
            raise ValueError(f"context length {self.n_ctx} is too small (at least 16 tokens)")
        if self.kv_type not in KV_TYPES:
            raise ValueError(f"unknown KV cache type {self.kv_type!r}; choose {', '.join(KV_TYPES)}")
        if self.kv_type != "f16" and not self.flash_attn:
            raise ValueError(f"a quantised KV cache ({self.kv_type}) needs flash attention on")
        if self.n_batch < 1:
            raise ValueError("batch size must be at least 1")
        if self.n_threads < 0:
            raise ValueError("thread count cannot be negative")
        g = self.n_gpu_layers
        if not (g in ("all", "none", "auto") or (isinstance(g, int) and g >= 0)):
            raise ValueError(f"GPU layers must be all, none, auto or a count, not {g!r}")

    @property
    def threads(self) -> int:
        """Threads for llama.cpp. Automatic: leave one core to the GUI on small machines (llama.cpp's
        threads spin at barriers, so one preempted thread stalls them all), half the logical cores
        (about the physical ones) on larger ones."""
        if self.n_threads:
            return self.n_threads
        n = os.cpu_count() or 2
        return max(1, n - 1) if n <= 4 else n // 2


@dataclass(frozen=True)
class SamplingSettings:
    """llama.cpp's native sampler chain, in its order: penalties, top-k, top-p, min-p, temperature."""

    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    repeat_last_n: int = 64
    seed: int = -1  # -1: a new random seed each request
    max_tokens: int = 1024
    stop: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError("temperature cannot be negative")
        if not 0 < self.top_p <= 1 or not 0 <= self.min_p <= 1:
            raise ValueError("top-p must be in (0, 1] and min-p in [0, 1]")
        if self.max_tokens < 1:
            raise ValueError("max tokens must be at least 1")


@dataclass(frozen=True)
class OverflowSettings:
    """What to do when the conversation outgrows the context."""

    policy: str = "rolling_window"
    reserve: int = 0  # tokens kept free for the answer; 0: min(max_tokens, n_ctx // 4)

    def __post_init__(self) -> None:
        if self.policy not in OVERFLOW_POLICIES:
            raise ValueError(f"unknown overflow policy {self.policy!r}; choose {', '.join(OVERFLOW_POLICIES)}")
