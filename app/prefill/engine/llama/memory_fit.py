"""Will this model run here? Weights + KV cache + compute buffers against free memory.

Everything comes from the GGUF header (a local file's, or a ranged read of a
remote one): the bytes of each layer's tensors, the shape for the KV cache, the
vocabulary and widths for llama.cpp's compute buffer. The answer is one of: all
layers on the GPU, some layers (how many), CPU only, or will not fit.

The compute-buffer formula follows what llama.cpp reserves for its worst-case
graph (flash attention off, the default): the larger of the logits stage
(`n_ubatch x (n_vocab + 2 n_embd)` floats) and the attention stage
(`n_ubatch x (n_ctx (n_head + 1) + 2 n_ff + n_embd)` floats: the KQ matrix, its
mask, the feed-forward activations). For SmolLM2 it lands within 2% of the sizes
llama.cpp prints at 512, 2048 and 8192 tokens (tests/hub/test_fit_measured.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from prefill.engine.gguf.header import GGUFHeader, as_int, read_header, split_paths
from prefill.engine.llama.hardware import MachineMemory
from prefill.engine.llama.kv_sizes import kv_bytes_per_cell
from prefill.engine.units import format_bytes

F32 = 4
RUNTIME_OVERHEAD = 64 << 20  # vocabulary tables, threads, the Python side
VRAM_RESERVE = 256 << 20  # the driver's and the desktop's share of the GPU
_LAYER = re.compile(r"^blk\.(\d+)\.")


class Fit(str, Enum):
    FULL_GPU = "full GPU offload"
    PARTIAL = "partial GPU offload"
    CPU_ONLY = "CPU only"
    WONT_FIT = "will not fit"


@dataclass(frozen=True)
class FitEstimate:
    """A fit estimate; byte counts are for the whole model at `n_ctx`.

    Attributes:
        fit: the verdict.
        gpu_layers: layers to offload (`n_gpu_layers` for llama.cpp); n_layer + 1
            for a full offload (the output layer too), 0 on CPU.
        weights, kv_cache, compute: the three parts of `total`.
        vram_needed, ram_needed: the split between GPU and RAM for the verdict.
    """

    fit: Fit
    gpu_layers: int
    n_layer: int
    n_ctx: int
    weights: int
    kv_cache: int
    compute: int
    vram_needed: int
    ram_needed: int
    vram_free: int
    ram_available: int
    draft: int = 0  # of `total`, what a draft model loaded beside it takes (`with_draft`)
    projector: int = 0  # of `weights`, a vision projector's (`with_projector`)
    image_tokens: int = 0  # the KV cells of one typical image, counted in `kv_cache` (`with_projector`)

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.compute

    def summary(self) -> str:
        gib = 1 << 30
        what = self.fit.value
        if self.fit == Fit.PARTIAL:
            what += f" ({self.gpu_layers} of {self.n_layer} layers)"
        text = f"{what}: needs {self.total / gib:.2f} GiB at {self.n_ctx} tokens"
        if self.projector:
            text += f" (with its projector, {self.projector / gib:.2f} GiB, and an image of {self.image_tokens} tokens)"
        return text


@dataclass(frozen=True)
class _Shape:
    layer_bytes: tuple[int, ...]  # weights of each repeating layer
    output_bytes: int  # the output layer, offloaded with the last "layer"
    input_bytes: int  # token embeddings: llama.cpp keeps them in RAM
    kv_per_cell: int
    n_vocab: int
    n_embd: int
    n_head: int
    n_ff: int


def estimate_fit(
    headers: GGUFHeader | Sequence[GGUFHeader],
    n_ctx: int,
    memory: MachineMemory,
    kv_type: str = "f16",
    n_ubatch: int = 512,
    flash_attn: bool = False,
) -> FitEstimate:
    """How a model (one header, or every part's header of a split model) fits `memory`.

    Args:
        headers: the model's GGUF header(s); the first one holds the metadata.
        n_ctx: context length to plan for.
        memory: free RAM and VRAM (`hardware.machine_memory()`).
        kv_type: KV cache type, one of `engine.kv.KV_TYPES`.
        n_ubatch: llama.cpp's micro-batch (its default is 512).
        flash_attn: whether flash attention will be on (smaller compute buffer).
    """
    hs = [headers] if isinstance(headers, GGUFHeader) else list(headers)
    s = _shape(hs, kv_type)
    n_layer = len(s.layer_bytes)
    weights = sum(s.layer_bytes) + s.output_bytes + s.input_bytes
    kv = s.kv_per_cell * n_ctx
    compute = _compute(s, n_ctx, n_ubatch, flash_attn)
    kv_layer = kv // n_layer if n_layer else 0
    vram_budget = max(0, memory.vram_free - VRAM_RESERVE)
    ram_budget = max(0, memory.ram_available - RUNTIME_OVERHEAD)

    def estimate(fit: Fit, layers: int, vram: int, ram: int) -> FitEstimate:
        return FitEstimate(
            fit, layers, n_layer, n_ctx, weights, kv, compute, vram, ram, memory.vram_free, memory.ram_available
        )

    host_compute = n_ubatch * s.n_embd * F32 * 4  # inputs and outputs staged in RAM
    if memory.gpus:
        full_vram = sum(s.layer_bytes) + s.output_bytes + kv + compute
        if full_vram <= vram_budget and s.input_bytes + host_compute <= ram_budget:
            return estimate(Fit.FULL_GPU, n_layer + 1, full_vram, s.input_bytes + host_compute)
        # llama.cpp offloads the last k layers; find the largest k that fits.
        for k in range(n_layer, 0, -1):
            gpu_layers = s.layer_bytes[n_layer - k :]
            vram = sum(gpu_layers) + kv_layer * k + compute
            ram = weights - sum(gpu_layers) + kv_layer * (n_layer - k) + compute
            if vram <= vram_budget:
                if ram <= ram_budget:
                    return estimate(Fit.PARTIAL, k, vram, ram)
                break
    cpu_ram = weights + kv + compute
    if cpu_ram <= ram_budget:
        return estimate(Fit.CPU_ONLY, 0, 0, cpu_ram)
    return estimate(Fit.WONT_FIT, 0, 0, cpu_ram)


def _compute(s: _Shape, n_ctx: int, n_ubatch: int, flash_attn: bool) -> int:
    ub = min(n_ubatch, n_ctx)
    logits = s.n_vocab + 2 * s.n_embd
    kq = n_ctx * (1 if flash_attn else s.n_head + 1)
    attention = kq + 2 * s.n_ff + s.n_embd
    return F32 * ub * max(logits, attention)


def _shape(hs: Sequence[GGUFHeader], kv_type: str = "f16") -> _Shape:
    first = hs[0]
    n_layer = first.n_layer
    layers = [0] * n_layer
    output = inputs = 0
    for h in hs:
        for t in h.tensors:
            m = _LAYER.match(t.name)
            if m and int(m[1]) < n_layer:
                layers[int(m[1])] += t.nbytes
            elif t.name.startswith("token_embd"):
                inputs += t.nbytes
            else:
                output += t.nbytes  # output, output_norm, rope factors: with the last layer
    n_vocab = first.array_lengths.get("tokenizer.ggml.tokens") or as_int(first.arch_value("vocab_size", 0))
    ff = first.arch_value("feed_forward_length", 0)
    n_ff = int(max(ff) if isinstance(ff, list) and ff else ff or 0)  # type: ignore[arg-type]
    return _Shape(
        tuple(layers), output, inputs, kv_bytes_per_cell(first, kv_type, kv_type),
        int(n_vocab), first.n_embd, first.n_head, n_ff,
    )


def with_draft(
    headers: GGUFHeader | Sequence[GGUFHeader],
    draft_headers: GGUFHeader | Sequence[GGUFHeader],
    n_ctx: int,
    memory: MachineMemory,
    kv_type: str = "f16",
    n_ubatch: int = 512,
    flash_attn: bool = False,
) -> FitEstimate:
    """How a model fits `memory` with a draft model (speculative decoding) loaded beside it.

    The draft model gets the same context and offload settings; it is small, so it is placed first
    and the main model is fitted into what it leaves. The result is the main model's verdict and
    layers, with the draft's weights, KV cache and compute buffers added to every byte count
    (`draft` says how much of `total` is the draft's); a draft that does not fit alone: WONT_FIT.
    """
    d = estimate_fit(draft_headers, n_ctx, memory, kv_type, n_ubatch, flash_attn)
    left = MachineMemory(
        memory.ram_total, max(0, memory.ram_available - d.ram_needed),
        tuple(replace(g, free=max(0, g.free - d.vram_needed)) if i == 0 else g for i, g in enumerate(memory.gpus)),
    )
    m = estimate_fit(headers, n_ctx, left, kv_type, n_ubatch, flash_attn)
    return replace(
        m, fit=Fit.WONT_FIT if d.fit == Fit.WONT_FIT else m.fit, weights=m.weights + d.weights,
        kv_cache=m.kv_cache + d.kv_cache, compute=m.compute + d.compute, vram_needed=m.vram_needed + d.vram_needed,
        ram_needed=m.ram_needed + d.ram_needed, vram_free=memory.vram_free, ram_available=memory.ram_available,
        draft=d.total,
    )


# A projector's header gives no image size (or one llama.cpp resizes away): LLaVA-1.5's figure,
# 336 px in 14 px patches = 24 x 24 = 576 tokens, sits in the middle of what vision models take
# (Gemma 3: 256, SmolVLM: 64 per tile, Qwen2.5-VL: up to thousands).
TYPICAL_IMAGE_TOKENS = 576
# Projector types that pool patches by a fixed factor llama.cpp does not write in the header.
_POOLED = {"gemma3": 16, "ldp": 4, "ldpv2": 4}


def image_tokens(projector: GGUFHeader) -> int:
    """The tokens (KV cells) one image of the projector's own size becomes: (image size / patch size)²,
    divided by the merge or pooling the projector applies; `TYPICAL_IMAGE_TOKENS` when its header
    does not say."""
    meta = projector.metadata
    size, patch = as_int(meta.get("clip.vision.image_size")), as_int(meta.get("clip.vision.patch_size"))
    if size <= 0 or patch <= 0:
        return TYPICAL_IMAGE_TOKENS
    n = (size // patch) ** 2
    merge = as_int(meta.get("clip.vision.spatial_merge_size")) or as_int(meta.get("clip.vision.projector.scale_factor"))
    if merge > 1:
        n //= merge * merge
    else:
        n //= _POOLED.get(str(meta.get("clip.projector_type", "")), 1)
    return max(1, n)


def with_projector(
    headers: GGUFHeader | Sequence[GGUFHeader],
    projector: GGUFHeader,
    n_ctx: int,
    memory: MachineMemory,
    kv_type: str = "f16",
    n_ubatch: int = 512,
    flash_attn: bool = False,
) -> FitEstimate:
    """How a vision model fits `memory` with its projector (mmproj) loaded beside it.

    The projector's weights (its tensors' bytes) go where mtmd puts them, on the GPU when there is
    one, and are taken from that memory first; the model is fitted into what is left, with the KV
    cells of one image of the projector's size (`image_tokens`) on top of `n_ctx` (the estimate
    still says `n_ctx`: the text's room is what a person chose). `projector` and
    `image_tokens` say how much of `weights` and `kv_cache` that is.
    """
    hs = [headers] if isinstance(headers, GGUFHeader) else list(headers)
    p_bytes = sum(t.nbytes for t in projector.tensors)
    n_image = image_tokens(projector)
    on_gpu = bool(memory.gpus)
    left = MachineMemory(
        memory.ram_total, max(0, memory.ram_available - (0 if on_gpu else p_bytes)),
        tuple(replace(g, free=max(0, g.free - p_bytes)) if i == 0 else g for i, g in enumerate(memory.gpus)),
    )
    m = estimate_fit(hs, n_ctx + n_image, left, kv_type, n_ubatch, flash_attn)
    return replace(
        m, n_ctx=n_ctx, weights=m.weights + p_bytes, vram_needed=m.vram_needed + (p_bytes if on_gpu else 0),
        ram_needed=m.ram_needed + (0 if on_gpu else p_bytes), vram_free=memory.vram_free,
        ram_available=memory.ram_available, projector=p_bytes, image_tokens=n_image,
    )


# --- a model on disk, and its estimate against what a load used ------------------------------
def estimate_local(path: str | Path, n_ctx: int, kv_type: str, memory: MachineMemory) -> FitEstimate:
    """The fit estimate of a model on disk, every part of a split set read (reads headers)."""
    first = read_header(path)
    return estimate_fit([first, *(read_header(p) for p in split_paths(path, first)[1:])], n_ctx, memory, kv_type)


def fit_breakdown(e: FitEstimate) -> str:
    """The parts of an estimate, one line each (a tooltip)."""
    return (f"weights {format_bytes(e.weights)}\n"
            f"KV cache {format_bytes(e.kv_cache)} at {e.n_ctx} tokens\n"
            f"compute buffers {format_bytes(e.compute)}\nGPU layers {e.gpu_layers} of {e.n_layer}\n"
            f"free: VRAM {format_bytes(e.vram_free)}, RAM {format_bytes(e.ram_available)}"
            + (f"\nof which the draft model {format_bytes(e.draft)}" if e.draft else "")
            + (f"\nof which the projector {format_bytes(e.projector)} and an image's KV "
               f"({e.image_tokens} tokens)" if e.projector else ""))


def fit_vs_actual(estimate: FitEstimate, model_bytes: int, kv_bytes_total: int, verdict: bool = True) -> str:
    """One sentence: the estimated weights and KV cache beside what the loaded model uses.

    Args:
        estimate: the estimate at the context length the model was loaded with.
        model_bytes: the loaded weights (llama.cpp's `llama_model_size`).
        kv_bytes_total: the KV cache of every cell of the loaded context.
        verdict: also say what the estimate predicted (only meaningful when memory was
            measured before the load).
    """

    def pair(what: str, est: int, used: int) -> str:
        diff = f" ({(used - est) / est:+.0%})" if est else ""
        return f"{what} {format_bytes(est)} estimated, {format_bytes(used)} used{diff}"

    text = (f"At {estimate.n_ctx} tokens: {pair('weights', estimate.weights, model_bytes)}; "
            f"{pair('KV cache', estimate.kv_cache, kv_bytes_total)}; "
            f"compute buffers {format_bytes(estimate.compute)} estimated (not measured).")
    if verdict:
        text += f" Predicted: {estimate.summary()}."
    return text
