"""A CUDA build that cannot reach a GPU says why in one line; what a GPU load took is read from its log."""

from __future__ import annotations

import pytest

from prefill.engine.llama import hardware
from prefill.engine.llama import offload as backend
from prefill.engine.llama.runtime import OffloadReport

H200 = hardware.GpuMemory(0, "NVIDIA H200", 141 << 30, 140 << 30)


@pytest.fixture
def cuda_build_on_the_cpu(monkeypatch: pytest.MonkeyPatch):
    """A CUDA build (mocked: the one here is the CPU build) whose ggml found no CUDA device; the
    driver's version and NVML's GPUs are set by the test."""
    monkeypatch.setattr(backend, "is_cuda_build", lambda: True)
    monkeypatch.setattr(backend, "supports_gpu_offload", lambda: False)

    def machine(driver: int | None, gpus: tuple[hardware.GpuMemory, ...]) -> None:
        monkeypatch.setattr(backend, "cuda_driver_version", lambda: driver)
        monkeypatch.setattr(hardware, "nvidia_gpus", lambda lib=None: gpus)

    return machine


def test_no_driver_or_no_gpu_is_said_even_for_auto(cuda_build_on_the_cpu) -> None:
    """Whoever installed the CUDA build expects the GPU: "auto" warns too (a CPU build only notes it)."""
    for driver in (None, 13000):
        cuda_build_on_the_cpu(driver, ())
        for asked in ("auto", "all", 20):
            r = backend.device_report(asked, OffloadReport(0, 31, ""))
            assert r.warning == "CUDA build, no GPU found: running on the CPU", (driver, asked)
            assert r.summary == "CPU (no NVIDIA GPU found)" and not r.gpu_build
        assert backend.device_report("none", OffloadReport(0, 31, "")).warning == ""  # the CPU was asked for


def test_a_driver_older_than_cuda_13_needs_is_named(cuda_build_on_the_cpu) -> None:
    cuda_build_on_the_cpu(12080, (H200,))  # a 570 driver: CUDA 12.8
    r = backend.device_report("auto", OffloadReport(0, 31, ""))
    assert r.warning == "the NVIDIA driver is older than CUDA 13 needs (580 or later): running on the CPU"
    assert "make run CUDA=1" not in r.warning  # the build is right; the driver is not


def test_a_gpu_and_driver_there_but_cuda_not_started_names_the_gpu(cuda_build_on_the_cpu) -> None:
    cuda_build_on_the_cpu(13000, (H200,))
    r = backend.device_report("auto", OffloadReport(0, 31, ""))
    assert r.warning == "CUDA build, but CUDA did not start on the NVIDIA H200: running on the CPU"


def test_the_reasons_are_one_line_each() -> None:
    for driver, gpu in ((None, ""), (12000, "NVIDIA GeForce RTX 3060"), (13010, ""), (13010, "NVIDIA H200")):
        line = backend.cuda_cpu_reason(driver, gpu)
        assert "\n" not in line and line.endswith("running on the CPU")


def test_cuda_driver_version_is_none_without_a_driver() -> None:
    import ctypes.util

    if ctypes.util.find_library("cuda"):
        pytest.skip("this machine has an NVIDIA driver")
    assert backend.cuda_driver_version() is None


def test_gpu_memory_is_summed_from_the_load_log() -> None:
    log = ("load_tensors:        CUDA0 model buffer size =   256.50 MiB\n"
           "load_tensors:   CPU_Mapped model buffer size =    80.00 MiB\n"
           "llama_kv_cache:      CUDA0 KV buffer size =    48.00 MiB\n"
           "llama_context:      CUDA0 compute buffer size =    66.50 MiB\n"
           "llama_context:  CUDA_Host compute buffer size =     9.01 MiB\n"
           "llama_context:  CUDA_Host  output buffer size =     0.19 MiB\n")
    assert backend.gpu_buffer_bytes(log) == (256.5 + 48 + 66.5) * 2**20
    assert backend.gpu_buffer_bytes("load_tensors:   CPU_Mapped model buffer size =    80.00 MiB\n") == 0
    r = backend.with_vram(backend.DeviceReport(True, "all", 31, 31, "CUDA0 (NVIDIA H200)"), log)
    assert r.vram_bytes == int(371 * 2**20) and r.gpu_layers == 31
