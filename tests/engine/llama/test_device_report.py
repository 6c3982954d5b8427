"""GPU offload is reported, never silently lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.engine.gguf.header import read_header
from prefill.engine.llama import offload as backend
from prefill.engine.llama.runtime import OffloadReport, _parse_offload, supports_gpu_offload
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.settings import LoadSettings


def test_cpu_run_on_a_machine_without_a_gpu_is_said_quietly(smollm2: Path) -> None:
    """Most laptops: no NVIDIA GPU, so running on the CPU is no fault: no warning, a note on the
    backend line. Asking for GPU layers explicitly still warns, without rebuild advice."""
    from prefill.engine.cuda_libs import is_cuda_build
    from prefill.engine.llama.hardware import nvidia_gpus

    if supports_gpu_offload() or nvidia_gpus() or is_cuda_build():
        pytest.skip("this machine has a GPU build or an NVIDIA GPU")
    for asked, summary, warned in (("auto", "CPU (no NVIDIA GPU found)", False),
                                   ("none", "CPU", False),
                                   ("all", "CPU (no NVIDIA GPU found)", True)):
        e = ChatEngine.load(smollm2, LoadSettings(n_ctx=256, n_gpu_layers=asked))
        try:
            r = e.device
            assert not r.gpu_build and r.gpu_layers == 0 and r.summary == summary, asked
            assert bool(r.warning) == warned, (asked, r.warning)
            assert "CMAKE_ARGS" not in r.warning and "pip" not in r.warning
        finally:
            e.close()
    assert "no NVIDIA GPU was found" in backend.device_report("all", OffloadReport(0, 31, "")).warning


@pytest.mark.parametrize("frozen", [False, True])
def test_a_gpu_there_and_unused_gets_advice_for_how_prefill_was_installed(
    monkeypatch: pytest.MonkeyPatch, frozen: bool
) -> None:
    """No NVIDIA GPU can exist on this machine: NVML's answer is mocked (one RTX 4090), and so is
    the CPU-only build (the real one here) so the test means the same on a CUDA build."""
    import sys

    from prefill.engine.llama import hardware

    gpu = hardware.GpuMemory(0, "NVIDIA GeForce RTX 4090", 24 << 30, 23 << 30)
    monkeypatch.setattr(hardware, "nvidia_gpus", lambda lib=None: (gpu,))
    monkeypatch.setattr(backend, "supports_gpu_offload", lambda: False)
    monkeypatch.setattr(backend, "is_cuda_build", lambda: False)
    monkeypatch.setattr(sys, "frozen", frozen, raising=False)
    for asked in ("auto", "all", 12):
        r = backend.device_report(asked, OffloadReport(0, 31, ""))
        assert r.summary == "CPU" and r.note == ""
        assert "NVIDIA GeForce RTX 4090" in r.warning, asked
        if frozen:  # the installed app: its CUDA build, never a command the user cannot run
            assert "CUDA build of Prefill" in r.warning and "prefill-cuda" in r.warning
            assert "pip" not in r.warning and "CMAKE_ARGS" not in r.warning
        else:
            assert "`make run CUDA=1`" in r.warning and "CMAKE_ARGS" not in r.warning
    assert backend.device_report("none", OffloadReport(0, 31, "")).warning == ""


def test_offload_counts_come_from_llama_cpp_log() -> None:
    log = ("load_tensors: offloading 30 repeating layers to GPU\n"
           "load_tensors: offloaded 12/31 layers to GPU\n"
           "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA H200) - 140000 MiB free\n")
    r = _parse_offload(log, 30)
    assert r == OffloadReport(12, 31, "CUDA0 (NVIDIA H200)")
    assert _parse_offload("nothing about GPUs", 30) == OffloadReport(0, 31, "")


def test_partial_offload_on_a_gpu_build_is_reported(monkeypatch: pytest.MonkeyPatch, smollm2: Path) -> None:
    """No CUDA device exists on this machine: the GPU build is mocked (supports_gpu_offload -> True),
    and llama.cpp's report says it offloaded only 12 of 31 layers."""
    monkeypatch.setattr(backend, "supports_gpu_offload", lambda: True)
    header = read_header(smollm2)
    assert backend.resolve_gpu_layers("all", header) == 31
    assert backend.resolve_gpu_layers(7, header) == 7
    r = backend.device_report("all", OffloadReport(12, 31, "CUDA0 (NVIDIA H200)"))
    assert r.gpu_build and r.summary == "CUDA0 (NVIDIA H200): 12/31 layers"
    assert "offloaded only 12 of 31" in r.warning
    full = backend.device_report("all", OffloadReport(31, 31, "CUDA0 (NVIDIA H200)"))
    assert full.warning == ""
    assert backend.device_report(12, OffloadReport(12, 31, "CUDA0")).warning == ""


def test_auto_uses_the_fit_estimate_and_says_when_it_is_partial(monkeypatch: pytest.MonkeyPatch, smollm2: Path) -> None:
    """No CUDA device here: the GPU build and NVML's free-memory reading are both mocked."""
    from prefill.engine.llama import hardware

    monkeypatch.setattr(backend, "supports_gpu_offload", lambda: True)
    header = read_header(smollm2)
    roomy = hardware.MachineMemory(ram_total=16 << 30, ram_available=8 << 30,
                                   gpus=(hardware.GpuMemory(0, "Mock GPU", 24 << 30, 24 << 30),))
    tight = hardware.MachineMemory(ram_total=16 << 30, ram_available=8 << 30,
                                   gpus=(hardware.GpuMemory(0, "Mock GPU", 1 << 30, 400 << 20),))
    monkeypatch.setattr(hardware, "machine_memory", lambda: roomy)
    assert backend.resolve_gpu_layers("auto", header, LoadSettings(n_ctx=4096)) == 31
    monkeypatch.setattr(hardware, "machine_memory", lambda: tight)
    partial = backend.resolve_gpu_layers("auto", header, LoadSettings(n_ctx=4096))
    assert 0 < partial < 31
    r = backend.device_report("auto", OffloadReport(partial, 31, "CUDA0"), partial)
    assert f"only {partial} of 31 layers fit" in r.warning
