"""A short, curated list of models worth starting with, and the ones that fit this machine.

The table is hand-kept: a repository, one file in it, its size, and what the model is
good for, in words. Each entry also carries the few figures a fit estimate needs
without reading the file's header (layers, KV bytes per token at f16, vocabulary), so
the list is filtered before anything is fetched. The verdicts come from the same rules
and reserves as `engine.llama.memory_fit` (a header's estimate replaces this rough one
once the repository is opened on the Models page).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prefill.engine.llama.hardware import MachineMemory
from prefill.engine.llama.memory_fit import F32, RUNTIME_OVERHEAD, VRAM_RESERVE, Fit, FitEstimate

_GB = 1000**3
_MB = 1000**2
_UBATCH = 512  # llama.cpp's default micro-batch, as memory_fit plans
# Weights read from RAM per token, at most: each token reads them all, so on a laptop's ~50 GB/s this is
# about 10 tokens/s; a bigger model that only fits in RAM runs, but too slowly to suggest.
RAM_COMFORT = 5 * _GB


@dataclass(frozen=True)
class Suggestion:
    """One curated model file.

    Attributes:
        repo_id, filename: where it is on the hub.
        size: the file's bytes (as the hub lists them, rounded).
        what: what it is, for a person choosing.
        n_layer, kv_per_token, n_vocab: its shape, for a fit estimate without its header
            (KV bytes per token with an f16 cache: 2 x layers x KV heads x head size x 2).
    """

    repo_id: str
    filename: str
    size: int
    what: str
    n_layer: int
    kv_per_token: int
    n_vocab: int


SUGGESTIONS: tuple[Suggestion, ...] = (
    Suggestion("HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", "smollm2-135m-instruct-q8_0.gguf", 145 * _MB,
               "Tiny and fast; for trying the app, not for real answers", 30, 23_040, 49_152),
    Suggestion("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q8_0.gguf", 676 * _MB,
               "Very small chat model; quick on any computer", 24, 12_288, 151_936),
    Suggestion("bartowski/Llama-3.2-1B-Instruct-GGUF", "Llama-3.2-1B-Instruct-Q4_K_M.gguf", 808 * _MB,
               "Small general assistant from Meta", 16, 32_768, 128_256),
    Suggestion("Qwen/Qwen2.5-1.5B-Instruct-GGUF", "qwen2.5-1.5b-instruct-q4_k_m.gguf", 1_120 * _MB,
               "Small chat model, good at following instructions", 28, 28_672, 151_936),
    Suggestion("bartowski/Llama-3.2-3B-Instruct-GGUF", "Llama-3.2-3B-Instruct-Q4_K_M.gguf", 2_020 * _MB,
               "Capable everyday assistant for laptops", 28, 114_688, 128_256),
    Suggestion("bartowski/google_gemma-3-4b-it-GGUF", "google_gemma-3-4b-it-Q4_K_M.gguf", 2_490 * _MB,
               "Google's Gemma 3: writing, summaries, many languages", 34, 139_264, 262_144),
    Suggestion("bartowski/Qwen2.5-7B-Instruct-GGUF", "Qwen2.5-7B-Instruct-Q4_K_M.gguf", 4_680 * _MB,
               "Strong all-rounder: coding, maths, long answers", 28, 57_344, 152_064),
    Suggestion("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", 4_920 * _MB,
               "Meta's popular 8B assistant", 32, 131_072, 128_256),
    Suggestion("bartowski/Mistral-Nemo-Instruct-2407-GGUF", "Mistral-Nemo-Instruct-2407-Q4_K_M.gguf", 7_480 * _MB,
               "Mistral's 12B model with a long context", 40, 163_840, 131_072),
    Suggestion("bartowski/Qwen2.5-14B-Instruct-GGUF", "Qwen2.5-14B-Instruct-Q4_K_M.gguf", 8_990 * _MB,
               "Larger and more careful; wants a big GPU or plenty of RAM", 48, 196_608, 152_064),
    Suggestion("bartowski/Qwen2.5-32B-Instruct-GGUF", "Qwen2.5-32B-Instruct-Q4_K_M.gguf", 19_900 * _MB,
               "Near the best open models; for workstations", 64, 262_144, 152_064),
)


def rough_fit(s: Suggestion, n_ctx: int, memory: MachineMemory) -> FitEstimate:
    """A fit estimate from the table's figures (no header): weights are the file, spread evenly
    over the layers; compute is the logits stage of memory_fit's formula."""
    weights, kv = s.size, s.kv_per_token * n_ctx
    compute = F32 * min(_UBATCH, n_ctx) * s.n_vocab
    vram_budget = max(0, memory.vram_free - VRAM_RESERVE)
    ram_budget = max(0, memory.ram_available - RUNTIME_OVERHEAD)

    def estimate(fit: Fit, layers: int, vram: int, ram: int) -> FitEstimate:
        return FitEstimate(fit, layers, s.n_layer, n_ctx, weights, kv, compute, vram, ram,
                           memory.vram_free, memory.ram_available)

    per_layer = (weights + kv) // max(1, s.n_layer)
    if memory.gpus:
        if weights + kv + compute <= vram_budget:
            return estimate(Fit.FULL_GPU, s.n_layer + 1, weights + kv + compute, 0)
        k = min(s.n_layer, max(0, (vram_budget - compute) // max(1, per_layer)))
        ram = weights + kv - per_layer * k + compute
        if k > 0 and ram <= ram_budget:
            return estimate(Fit.PARTIAL, int(k), per_layer * k + compute, ram)
    total = weights + kv + compute
    return estimate(Fit.CPU_ONLY if total <= ram_budget else Fit.WONT_FIT, 0, 0, total)


Q4_K_M_BYTES_PER_PARAM = 0.61  # about 4.9 bits a weight: the size of the usual choice of file
SIZE_MARGIN = 1.2  # the KV cache and buffers at a usual context, on top of the weights


def size_fit(size: int, memory: MachineMemory) -> Fit:
    """A verdict from a file's size alone (a search result, before any header is read): the weights
    and a fifth more, against the same budgets as `rough_fit`. Opening the repository replaces it with
    each file's estimate from its header."""
    need = int(size * SIZE_MARGIN)
    vram_budget = max(0, memory.vram_free - VRAM_RESERVE)
    ram_budget = max(0, memory.ram_available - RUNTIME_OVERHEAD)
    if memory.gpus and need <= vram_budget:
        return Fit.FULL_GPU
    if memory.gpus and vram_budget > need // 8 and need - vram_budget <= ram_budget:
        return Fit.PARTIAL
    return Fit.CPU_ONLY if need <= ram_budget else Fit.WONT_FIT


def suggest(memory: MachineMemory, n_ctx: int, limit: int = 5,
            table: Sequence[Suggestion] = SUGGESTIONS) -> list[tuple[Suggestion, FitEstimate]]:
    """The largest `limit` models of `table` that fit `memory` at `n_ctx` and run at a usable speed
    (at most `RAM_COMFORT` of them in RAM), those that run on the GPU whole first, then by size,
    largest first (the most capable that runs well)."""
    fitting = [(s, e) for s in table if (e := rough_fit(s, n_ctx, memory)).fit != Fit.WONT_FIT
               and (e.fit == Fit.FULL_GPU or e.ram_needed <= RAM_COMFORT)]
    fitting.sort(key=lambda p: (p[1].fit != Fit.FULL_GPU, -p[0].size))
    return fitting[:limit]
