"""What a load and a generation take: the one typed, checked, frozen schema.

These sections are what the engine consumes, what the store persists (its ``Settings``
holds them as they are) and what the settings dialog and the CLI are built from. Every
rule is written once, here: a field's type and range in its ``doc`` metadata, rules
between fields in ``rules()``. Building a section with a value llama.cpp would refuse
(or abort on) raises ``InvalidSetting``.
"""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from prefill.engine.errors import InvalidSetting
from prefill.engine.setting_fields import Section, doc

KvType = Literal["f16", "q8_0", "q4_0"]
GpuChoice = Literal["auto", "all", "none"]
FlashAttn = Literal["auto", "on", "off"]
GpuLayers = GpuChoice | int
OverflowPolicy = Literal["rolling_window", "truncate_middle", "stop", "summarise"]

KV_TYPES: tuple[str, ...] = typing.get_args(KvType)
OVERFLOW_POLICIES: tuple[str, ...] = typing.get_args(OverflowPolicy)


@dataclass(frozen=True)
class LoadSettings(Section):
    """How to load a model. `n_gpu_layers`: "auto" (as many as fit), "all", "none" or a count."""

    NAME: ClassVar[str] = "model"
    n_ctx: int = field(
        default=4096,
        metadata=doc("Context length in tokens.", label="Context length", minimum=128, maximum=1_048_576),
    )
    n_gpu_layers: GpuLayers = field(
        default="auto",
        metadata=doc("Layers offloaded to the GPU: auto, all, none or a count.", label="GPU layers", minimum=0),
    )
    flash_attn: FlashAttn = field(
        default="auto",
        # Files of older versions hold true/false.
        metadata=doc("Flash attention: auto (on where the backend supports it), on or off.",
                     label="Flash attention", legacy={True: "on", False: "off"}),
    )
    kv_type: KvType = field(
        default="f16",
        metadata=doc("KV cache type: f16, or q8_0 / q4_0 (flash attention auto or on).", label="KV cache type"),
    )
    n_threads: int = field(
        default=0,
        metadata=doc("CPU threads for generation (and the prompt); 0 = automatic.", label="CPU threads",
                     minimum=0, maximum=512),
    )
    n_batch: int = field(
        default=512,
        metadata=doc("Prompt tokens evaluated per batch.", label="Batch size", minimum=1, maximum=65536),
    )

    def rules(self) -> None:
        # llama.cpp refuses a quantised V cache without flash attention (llama_init_from_model); with
        # "auto" it turns flash attention on for it.
        if self.kv_type != "f16" and self.flash_attn == "off":
            raise InvalidSetting(f"{self.NAME}.kv_type",
                                 f"a quantised KV cache ({self.kv_type}) needs flash attention (auto or on), "
                                 "not off")

    @property
    def threads(self) -> int:
        """Threads for llama.cpp. Automatic: leave one core to the GUI on small machines (llama.cpp's
        threads spin at barriers, so one preempted thread stalls them all), half the logical cores
        (about the physical ones) on larger ones."""
        return self._threads(spare=1)

    @property
    def prefill_threads(self) -> int:
        """Threads for the prompt (llama.cpp's batches). Automatic: every core on small machines too,
        since the prompt is the long wait (the time to the first token) and the window has little to
        do meanwhile (2x the prefill rate on 2 cores; a busy Python thread beside it was late by 5 ms
        at most); half the logical cores on larger ones, as for decoding. A count set is used for both."""
        return self._threads(spare=0)

    def _threads(self, spare: int) -> int:
        """The count set, else: all cores but `spare` on machines of up to 4, half the logical ones above."""
        if self.n_threads:
            return self.n_threads
        n = os.cpu_count() or 2
        return max(1, n - spare) if n <= 4 else n // 2


@dataclass(frozen=True)
class SamplingSettings(Section):
    """llama.cpp's native sampler chain, in its order: penalties, top-k, top-p, min-p, temperature."""

    NAME: ClassVar[str] = "sampling"
    temperature: float = field(
        default=0.7,
        metadata=doc("Randomness; 0 = always the likeliest token.", label="Temperature",
                     minimum=0, maximum=5, step=0.05),
    )
    top_k: int = field(
        default=40, metadata=doc("Keep only the k likeliest tokens; 0 = all.", label="Top-k", minimum=0)
    )
    top_p: float = field(
        default=0.95,
        # llama.cpp keeps at least one token, so 0 means: only the likeliest.
        metadata=doc("Keep the likeliest tokens up to this total probability; 1 = off.", label="Top-p",
                     minimum=0, maximum=1, step=0.01),
    )
    min_p: float = field(
        default=0.05,
        metadata=doc("Drop tokens less likely than this times the best one.", label="Min-p",
                     minimum=0, maximum=1, step=0.01),
    )
    repeat_penalty: float = field(
        default=1.1,
        # llama.cpp divides by it: 0 would make a repeated token infinitely likely.
        metadata=doc("Penalty for repeating recent tokens; 1 = none.", label="Repeat penalty",
                     above=0, maximum=10, step=0.05),
    )
    repeat_last_n: int = field(
        default=64,
        metadata=doc("How many recent tokens the repeat penalty looks at.", label="Penalty window",
                     minimum=0, maximum=65536),
    )
    seed: int = field(
        default=-1,
        metadata=doc("Random seed; -1 = a new one each time.", label="Seed", minimum=-1, maximum=2**31 - 1),
    )
    max_tokens: int = field(
        default=1024, metadata=doc("Longest answer in tokens.", label="Max tokens", minimum=1, maximum=1_048_576)
    )
    stop: tuple[str, ...] = field(
        default=(), metadata=doc("Texts that end the answer where the model writes them.", label="Stop texts")
    )


@dataclass(frozen=True)
class OverflowSettings(Section):
    """What to do when the conversation outgrows the context."""

    NAME: ClassVar[str] = "overflow"
    policy: OverflowPolicy = field(
        default="rolling_window",
        metadata=doc("When the chat outgrows the context: rolling_window, truncate_middle, stop, or summarise "
                     "(the model summarises the chat and it goes on from the summary).",
                     label="When the chat is too long"),
    )
    reserve: int = field(
        default=0,
        metadata=doc("Tokens kept free for the answer; 0 = min(max tokens, context / 4).", minimum=0),
    )

    def reserve_for(self, max_tokens: int, n_ctx: int) -> int:
        """The tokens kept free for the answer in a context of `n_ctx`."""
        return self.reserve or min(max_tokens, n_ctx // 4)


@dataclass(frozen=True)
class ServeSampling(SamplingSettings):
    """SamplingSettings plus what an OpenAI-style request can also ask for."""

    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    ignore_eos: bool = False  # keep going past end-of-generation tokens (benchmarks)
    # (token, bias) added to its logit before sampling, as OpenAI's logit_bias; -100 bans the token
    logit_bias: tuple[tuple[int, float], ...] = field(default=(), metadata={"own_check": True})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not -2 <= self.frequency_penalty <= 2 or not -2 <= self.presence_penalty <= 2:
            raise ValueError("frequency and presence penalties must be in [-2, 2]")
        if any(t < 0 or not -100 <= b <= 100 for t, b in self.logit_bias):
            raise ValueError("a logit bias is a token id (0 up) and a bias from -100 to 100")
