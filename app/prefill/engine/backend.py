"""Where the model runs: GPU layers asked for, layers llama.cpp really offloaded, and why not.

Offload that was asked for and not achieved is always reported (`warning`), never silent.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefill.engine.gguf_header import GGUFHeader
from prefill.engine.llama_runtime import OffloadReport, supports_gpu_offload
from prefill.engine.settings import GpuLayers, LoadSettings

CPU_ONLY_HINT = (
    "this llama.cpp build cannot use a GPU; reinstall llama-cpp-python with "
    'CMAKE_ARGS="-DGGML_CUDA=on" (see the README)'
)


@dataclass(frozen=True)
class BackendReport:
    gpu_build: bool  # the llama.cpp build can offload at all
    requested: str  # what was asked: "all", "none", "auto" or a count
    gpu_layers: int  # what llama.cpp says it offloaded
    total_layers: int  # repeating layers + the output layer
    device: str
    warning: str = ""

    @property
    def summary(self) -> str:
        if self.gpu_layers == 0:
            return "CPU"
        return f"{self.device or 'GPU'}: {self.gpu_layers}/{self.total_layers} layers"


def resolve_gpu_layers(requested: GpuLayers, header: GGUFHeader, settings: LoadSettings | None = None) -> int:
    """The n_gpu_layers to give llama.cpp. "auto": as many as the fit estimate says fit in free VRAM."""
    if requested == "none" or not supports_gpu_offload():
        return 0
    if requested == "all":
        return header.n_layer + 1
    if requested == "auto":
        from prefill.engine.fit import estimate_fit
        from prefill.engine.hardware import machine_memory

        s = settings or LoadSettings()
        memory = machine_memory()
        if not memory.gpus:  # a GPU build whose memory we cannot read (Metal, Vulkan…): trust llama.cpp
            return header.n_layer + 1
        return estimate_fit(header, s.n_ctx, memory, s.kv_type, s.n_batch, s.flash_attn).gpu_layers
    return min(int(requested), header.n_layer + 1)


def backend_report(requested: GpuLayers, offload: OffloadReport, resolved: int | None = None) -> BackendReport:
    """What happened, against what was asked. `resolved` is the layer count given to llama.cpp."""
    gpu = supports_gpu_offload()
    want = str(requested)
    warning = ""
    asked = requested not in ("none", 0)
    total = offload.total_layers
    if asked and not gpu:
        if requested != "auto":
            warning = f"GPU offload was asked for ({want} layers) but {CPU_ONLY_HINT}"
        else:
            warning = f"running on the CPU: {CPU_ONLY_HINT}"
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
    return BackendReport(gpu, want, offload.gpu_layers, total, offload.device, warning)
