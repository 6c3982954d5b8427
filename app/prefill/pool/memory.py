"""What a resident model takes, and the budget they share.

Before a load the pool weighs the fit estimate (`engine/llama/memory_fit.py`: weights, KV cache
and compute buffers from the GGUF header) against what the residents take; after it, a resident
carries llama.cpp's own figures: `llama_model_size` for the weights and the KV cache's cells times
their bytes (`engine/llama/kv_sizes.py`, llama.cpp's formula), and its compute and output buffers
as llama.cpp reported creating the context (`logged_buffers`).

Why the compute buffers come from llama.cpp's log: its C API, as llama-cpp-python 0.3 binds it, has no
call that returns them. `llama_state_get_size` is the size of the state a save writes (the KV cells in
use, the logits), not the scheduler's buffers; `llama_memory_breakdown_print` only prints. What
llama.cpp prints as it makes the context ("CPU compute buffer size = 13.01 MiB") is its own figure,
kept in `LlamaRuntime.context_log` (the window's and the terminal's engines, the server's batch
contexts). Where no such line is found (a build that words it otherwise) the compute buffers stay the
fit estimate, and `compute_measured` is False so that every listing can say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from prefill.engine.llama.hardware import MachineMemory, machine_memory
from prefill.engine.llama.memory_fit import estimate_local
from prefill.engine.settings import LoadSettings
from prefill.engine.units import format_bytes

MARGIN_FRACTION = 0.10  # of the machine's memory, left to everything else
MIN_MARGIN = 512 << 20
_UNLIMITED = MachineMemory(1 << 62, 1 << 62)  # the estimate's parts, whatever this machine has


@dataclass(frozen=True)
class ModelMemory:
    """Bytes one model takes: its weights, its KV cache (every slot), its compute buffers, its projector,
    and the bound of its prompt cache (prompts kept in host memory after they left their slot)."""

    weights: int
    kv: int
    compute: int
    projector: int = 0
    measured: bool = False  # weights and KV from llama.cpp after the load (else all estimated)
    compute_measured: bool = False  # the compute buffers as llama.cpp reported them (else the estimate)
    prompt_cache: int = 0  # the most its prompt cache may hold: counted whole, however full it is

    @property
    def total(self) -> int:
        return self.weights + self.kv + self.compute + self.projector + self.prompt_cache

    def as_dict(self) -> dict[str, object]:
        return {"total": self.total, "weights": self.weights, "kv": self.kv, "compute": self.compute,
                "projector": self.projector, "prompt_cache": self.prompt_cache, "measured": self.measured,
                "compute_measured": self.compute_measured}

    def summary(self) -> str:
        return format_bytes(self.total)

    def how(self) -> str:
        """Which parts are measured, in words ("measured", "compute buffers estimated", "estimated")."""
        if not self.measured:
            return "estimated"
        return "measured" if self.compute_measured else "compute buffers estimated"


def estimate(path: Path, settings: LoadSettings, n_seq: int, projector: Path | None = None) -> ModelMemory:
    """The fit estimate of a model loaded for `n_seq` slots of `settings.n_ctx` tokens (reads headers).

    Raises:
        GGUFError: a header that cannot be read.
    """
    e = estimate_local(path, settings.n_ctx * n_seq, settings.kv_type, _UNLIMITED)
    return ModelMemory(e.weights, e.kv_cache, e.compute, _file_size(projector))


def measured(weights: int, kv_cells: int, bytes_per_cell: int, guess: ModelMemory,
             compute: int | None = None) -> ModelMemory:
    """llama.cpp's figures after the load: `weights` (llama_model_size), the KV cache's cells times
    their bytes, and `compute` (its compute and output buffers, `logged_buffers`; None: not reported,
    the estimate stands); the projector as estimated (its file's size)."""
    if compute is None:
        return ModelMemory(weights, kv_cells * bytes_per_cell, guess.compute, guess.projector, measured=True)
    return ModelMemory(weights, kv_cells * bytes_per_cell, compute, guess.projector, measured=True,
                       compute_measured=True)


# "CPU compute buffer size =    13.01 MiB", "CUDA0 compute buffer size = 4.50 MiB", "CPU  output buffer size = 0.12 MiB"
_BUFFER = re.compile(r"\b(\w+)\s+(compute|output) buffer size\s*=\s*([\d.]+) MiB")


def logged_buffers(load_log: str) -> int | None:
    """The compute and output buffers llama.cpp reported making a context, in bytes, every device's
    together; None when the log says nothing of them."""
    found = [float(m.group(3)) for m in _BUFFER.finditer(load_log)]
    return int(sum(found) * 2**20) if found else None


def default_budget(on_gpu: bool, memory: MachineMemory | None = None) -> int:
    """What this machine has for models: its free VRAM when layers are offloaded to a GPU, else its
    available RAM; less a margin (10%, at least 512 MiB) for everything else."""
    m = memory or machine_memory()
    have = m.vram_free if on_gpu and m.gpus else m.ram_available
    return max(0, have - max(MIN_MARGIN, int(have * MARGIN_FRACTION)))


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """`8G`, `512M`, `1.5GiB`, `2000000000` as bytes (binary units).

    Raises:
        ValueError: not a size.
    """
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a size (say 8G, 512M or a number of bytes)")
    return int(float(m.group(1)) * _SCALE[m.group(2).upper()])


_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
# Go's form, as Ollama's clients write keep_alive: "5m0s", "1h30m", "-1m"
_GO_DURATION = re.compile(r"^\s*(-?)((?:\d+(?:\.\d+)?(?:ms|s|m|h)){2,8})\s*$", re.IGNORECASE)
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)", re.IGNORECASE)
_SECONDS = {"ms": 0.001, "s": 1, "": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | float | int) -> float:
    """Seconds from `600`, `10m`, `1.5h`, `30s`, or Go's `1h30m` and `5m0s` (a number alone is seconds;
    negative: forever, as Ollama's keep_alive).

    Raises:
        ValueError: not a duration.
    """
    if isinstance(text, bool):
        raise ValueError("a duration is a number of seconds or a text such as 10m")
    if isinstance(text, int | float):
        return float(text)
    m = _DURATION.match(text)
    if m is not None:
        return float(m.group(1)) * _SECONDS[(m.group(2) or "").lower()]
    go = _GO_DURATION.match(text)
    if go is None:
        raise ValueError(f"{text!r} is not a duration (say 600, 30s, 10m or 1h)")
    seconds = sum(float(n) * _SECONDS[unit.lower()] for n, unit in _GO_PART.findall(go.group(2)))
    return -seconds if go.group(1) else seconds


def _file_size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0
