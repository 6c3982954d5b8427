"""Where the model runs: GPU layers asked for, layers llama.cpp really offloaded, and why not.

Offload that was asked for and not achieved is always reported (`warning`), never silent.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefill.engine.gguf_header import GGUFHeader
from prefill.engine.llama_runtime import OffloadReport, supports_gpu_offload
from prefill.engine.settings import GpuLayers

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


def resolve_gpu_layers(requested: GpuLayers, header: GGUFHeader) -> int:
    """The n_gpu_layers to give llama.cpp. "auto" offloads all layers when there is a GPU."""
    if requested == "none" or not supports_gpu_offload():
        return 0
    if requested in ("all", "auto"):
        return header.n_layer + 1
    return min(int(requested), header.n_layer + 1)


def backend_report(requested: GpuLayers, offload: OffloadReport) -> BackendReport:
    gpu = supports_gpu_offload()
    want = str(requested)
    warning = ""
    asked = requested not in ("none", 0)
    if asked and not gpu:
        if requested != "auto":
            warning = f"GPU offload was asked for ({want} layers) but {CPU_ONLY_HINT}"
        else:
            warning = f"running on the CPU: {CPU_ONLY_HINT}"
    elif asked and gpu:
        expected = offload.total_layers if requested in ("all", "auto") else min(int(requested), offload.total_layers)
        if offload.gpu_layers < expected:
            warning = (
                f"GPU offload was asked for ({want}) but llama.cpp offloaded only "
                f"{offload.gpu_layers} of {offload.total_layers} layers"
            )
    return BackendReport(gpu, want, offload.gpu_layers, offload.total_layers, offload.device, warning)
