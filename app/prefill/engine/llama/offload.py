"""Where the model runs: GPU layers asked for, layers llama.cpp really offloaded, and why not.

Offload that was asked for and not achieved is always reported, never silent: a `warning` when
a GPU is there and unused (or explicitly asked for), a quiet `note` on the backend line when the
machine has no NVIDIA GPU (most laptops: running on the CPU is then no fault). A CUDA build that
cannot reach a GPU always warns: whoever installed it expects the GPU, and deserves the reason
(no GPU, or a driver too old for CUDA 13) in one line.
"""

from __future__ import annotations

import ctypes
import re
import sys
from dataclasses import dataclass, replace

from prefill.engine.cuda_libs import is_cuda_build
from prefill.engine.gguf.header import GGUFHeader
from prefill.engine.llama.runtime import OffloadReport, supports_gpu_offload
from prefill.engine.settings import GpuLayers, LoadSettings

NO_GPU_NOTE = "no NVIDIA GPU found"
CUDA_MAJOR = 13  # the CUDA runtime scripts/llama_build.py builds with
MIN_DRIVER_SERIES = 580  # the first driver series that runs CUDA 13
CUDA_NO_GPU = "CUDA build, no GPU found: running on the CPU"
CUDA_OLD_DRIVER = (f"the NVIDIA driver is older than CUDA {CUDA_MAJOR} needs ({MIN_DRIVER_SERIES} or later): "
                   "running on the CPU")
# llama.cpp's load log: "load_tensors:        CUDA0 model buffer size =   256.00 MiB", and the same
# for the KV cache and compute buffers; CUDA_Host (pinned RAM) and CPU buffers are not on the GPU.
_GPU_BUFFER = re.compile(r"\b(?:CUDA|ROCm|Vulkan|MTL|Metal)\d*\s+(?:model|KV|compute|RS|output)\s+buffer size\s*=\s*"
                         r"([\d.]+) MiB")


def cpu_only_hint(gpu: str, frozen: bool | None = None) -> str:
    """Why `gpu` is unused and how to use it, for how Prefill was installed: the installed app
    (frozen) is replaced by its CUDA build; from source, llama-cpp-python is rebuilt with CUDA."""
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    if frozen:
        return (f"this Prefill build cannot use the {gpu}; install the CUDA build of Prefill "
                "(the download with -cuda in its name, or the prefill-cuda package) to run models on it")
    return (f"this llama.cpp build cannot use the {gpu}; `make run CUDA=1` builds llama.cpp with CUDA "
            "for it (once, about 35 min; see docs/gpu.md)")


def cuda_driver_version() -> int | None:
    """The CUDA version the installed driver runs (13000 for 13.0), None without a driver."""
    try:
        lib = ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
    except OSError:
        return None
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return version.value


def cuda_cpu_reason(driver: int | None, gpu: str) -> str:
    """Why a CUDA build of llama.cpp found no GPU to use, in one line. `driver`: cuDriverGetVersion's
    answer (None: no driver), `gpu`: the GPU NVML sees ("" for none)."""
    if driver is not None and driver < CUDA_MAJOR * 1000:
        return CUDA_OLD_DRIVER
    if driver is None or not gpu:
        return CUDA_NO_GPU
    return f"CUDA build, but CUDA did not start on the {gpu}: running on the CPU"


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
    vram_bytes: int = 0  # GPU memory llama.cpp allocated (with_vram); 0 when unknown or on the CPU

    @property
    def summary(self) -> str:
        if self.gpu_layers == 0:
            return f"CPU ({self.note})" if self.note else "CPU"
        return f"{self.device or 'GPU'}: {self.gpu_layers}/{self.total_layers} layers"


def gpu_buffer_bytes(load_log: str) -> int:
    """Memory llama.cpp allocated on GPUs (weights, KV cache, compute), from its load log; 0 on the CPU."""
    return int(sum(float(m.group(1)) for m in _GPU_BUFFER.finditer(load_log)) * 2**20)


def with_vram(report: DeviceReport, load_log: str) -> DeviceReport:
    """`report` with the GPU memory the load log shows."""
    return replace(report, vram_bytes=gpu_buffer_bytes(load_log))


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
        # Before the load, "auto" is not resolved yet: estimated as off (the larger compute buffer), the
        # safe side of the fit.
        return estimate_fit(header, s.n_ctx, memory, s.kv_type, s.n_batch, s.flash_attn == "on").gpu_layers
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
        if is_cuda_build():
            warning = cuda_cpu_reason(cuda_driver_version(), name)
            note = NO_GPU_NOTE if not name else ""
        elif not name:
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
