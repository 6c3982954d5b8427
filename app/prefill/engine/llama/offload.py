"""Where the model runs: GPU layers asked for, layers llama.cpp really offloaded, and why not.

Offload that was asked for and not achieved is always reported, never silent: a `warning` when
a GPU is there and unused (or explicitly asked for), a quiet `note` on the backend line when the
machine has no NVIDIA GPU (most laptops: running on the CPU is then no fault).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from prefill.engine.gguf.header import GGUFHeader
from prefill.engine.llama.runtime import OffloadReport, supports_gpu_offload
from prefill.engine.settings import GpuLayers, LoadSettings

NO_GPU_NOTE = "no NVIDIA GPU found"


def cpu_only_hint(gpu: str, frozen: bool | None = None) -> str:
    """Why `gpu` is unused and how to use it, for how Prefill was installed: the installed app
    (frozen) is replaced by its CUDA build; from source, llama-cpp-python is rebuilt with CUDA."""
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    if frozen:
        return (f"this Prefill build cannot use the {gpu}; install the CUDA build of Prefill "
                "(the download with -cuda in its name, or the prefill-cuda package) to run models on it")
    return (f"this llama.cpp build cannot use the {gpu}; reinstall llama-cpp-python with "
            'CMAKE_ARGS="-DGGML_CUDA=on" (see the README)')


def nvidia_gpu_name() -> str:
    """The first NVIDIA GPU NVML sees, "" when none (or no driver)."""
    from prefill.engine.llama.hardware import nvidia_gpus

    gpus = nvidia_gpus()
    return (gpus[0].name or "NVIDIA GPU") if gpus else ""


@dataclass(frozen=True)
class DeviceReport:
    gpu_build: bool  # the llama.cpp build can offload at all
    requested: str  # what was asked: "all", "none", "auto" or a count
    gpu_layers: int  # what llama.cpp says it offloaded
    total_layers: int  # repeating layers + the output layer
    device: str
    warning: str = ""
    note: str = ""  # said quietly on the backend line

    @property
    def summary(self) -> str:
        if self.gpu_layers == 0:
            return f"CPU ({self.note})" if self.note else "CPU"
        return f"{self.device or 'GPU'}: {self.gpu_layers}/{self.total_layers} layers"


def resolve_gpu_layers(requested: GpuLayers, header: GGUFHeader, settings: LoadSettings | None = None) -> int:
    """The n_gpu_layers to give llama.cpp. "auto": as many as the fit estimate says fit in free VRAM."""
    if requested == "none" or not supports_gpu_offload():
        return 0
    if requested == "all":
        return header.n_layer + 1
    if requested == "auto":
        from prefill.engine.llama.hardware import machine_memory
        from prefill.engine.llama.memory_fit import estimate_fit

        s = settings or LoadSettings()
        memory = machine_memory()
        if not memory.gpus:  # a GPU build whose memory we cannot read (Metal, Vulkan…): trust llama.cpp
            return header.n_layer + 1
        return estimate_fit(header, s.n_ctx, memory, s.kv_type, s.n_batch, s.flash_attn).gpu_layers
    return min(int(requested), header.n_layer + 1)


def device_report(requested: GpuLayers, offload: OffloadReport, resolved: int | None = None) -> DeviceReport:
    """What happened, against what was asked. `resolved` is the layer count given to llama.cpp."""
    gpu = supports_gpu_offload()
    want = str(requested)
    warning = note = ""
    asked = requested not in ("none", 0)
    total = offload.total_layers
    if asked and not gpu:
        name = nvidia_gpu_name()
        if not name:
            note = NO_GPU_NOTE
            if requested != "auto":
                warning = f"GPU offload was asked for ({want} layers) but no NVIDIA GPU was found; running on the CPU"
        elif requested != "auto":
            warning = f"GPU offload was asked for ({want} layers) but {cpu_only_hint(name)}"
        else:
            warning = f"running on the CPU: {cpu_only_hint(name)}"
    elif asked and gpu:
        if requested == "all":
            expected = total
        elif requested == "auto":
            expected = min(total, resolved if resolved is not None else total)
        else:
            expected = min(int(requested), total)
        if offload.gpu_layers < expected:
            warning = (
                f"GPU offload was asked for ({want}) but llama.cpp offloaded only "
                f"{offload.gpu_layers} of {total} layers"
            )
        elif requested == "auto" and offload.gpu_layers < total:
            warning = (
                f"only {offload.gpu_layers} of {total} layers fit in the GPU's free memory; "
                "the rest run on the CPU (slower)"
            )
    return DeviceReport(gpu, want, offload.gpu_layers, total, offload.device, warning, note)
