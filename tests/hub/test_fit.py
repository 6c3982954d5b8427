"""Fit verdicts, NVML reading, and a remote header read with growing ranges.

There is no CUDA device on the test machine, so the NVML part is mocked: a fake
library object answers the same calls `libnvidia-ml.so.1` would.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from prefill.engine.gguf.header import read_header
from prefill.engine.llama import hardware
from prefill.engine.llama.hardware import GpuMemory, MachineMemory
from prefill.engine.llama.memory_fit import Fit, estimate_fit, fit_vs_actual
from prefill.hub.client import HubClient
from prefill.hub.remote_header import fetch_header
from tests.hub.fake_hub import FakeFile, FakeHub, FakeRepo
from tests.hub.gguf_factory import write_tiny_gguf

MiB = 1 << 20


@pytest.fixture
def header(tmp_path: Path):  # noqa: ANN201
    return read_header(write_tiny_gguf(tmp_path / "t.gguf", n_layer=4, n_embd=256, n_vocab=64))


def _machine(ram: int, vram: int | None) -> MachineMemory:
    gpus = () if vram is None else (GpuMemory(0, "Fake GPU", vram, vram),)
    return MachineMemory(ram * 2, ram, gpus)


def test_verdicts(header) -> None:  # noqa: ANN001
    e = estimate_fit(header, 1024, _machine(16 << 30, 8 << 30))
    assert e.fit == Fit.FULL_GPU and e.gpu_layers == 5
    assert e.total == e.weights + e.kv_cache + e.compute
    assert e.kv_cache == 4 * 2 * 64 * 2 * 2 * 1024  # layers x kv heads x head dim x (k+v) x f16 x cells
    # VRAM for about two layers plus the cache and compute: a partial offload.
    budget = e.compute + e.kv_cache // 2 + 2 * (e.weights // 5)
    p = estimate_fit(header, 1024, _machine(16 << 30, hardware_reserve() + budget))
    assert p.fit == Fit.PARTIAL and 0 < p.gpu_layers < 4
    assert estimate_fit(header, 1024, _machine(16 << 30, None)).fit == Fit.CPU_ONLY
    assert estimate_fit(header, 1024, _machine(70 * MiB, None)).fit == Fit.WONT_FIT
    q = estimate_fit(header, 1024, _machine(16 << 30, None), kv_type="q8_0")
    assert q.kv_cache < e.kv_cache


def hardware_reserve() -> int:
    from prefill.engine.llama.memory_fit import VRAM_RESERVE

    return VRAM_RESERVE


class _FakeNvml:
    """Answers the NVML calls nvidia_gpus makes, as the driver would for one 24 GiB card."""

    def nvmlInit_v2(self) -> int:
        return 0

    def nvmlShutdown(self) -> int:
        return 0

    def nvmlDeviceGetCount_v2(self, count) -> int:  # noqa: ANN001
        ctypes.cast(count, ctypes.POINTER(ctypes.c_uint))[0] = 1
        return 0

    def nvmlDeviceGetHandleByIndex_v2(self, i, handle) -> int:  # noqa: ANN001
        return 0

    def nvmlDeviceGetMemoryInfo(self, handle, mem) -> int:  # noqa: ANN001
        m = ctypes.cast(mem, ctypes.POINTER(hardware._NvmlMemory))[0]
        m.total, m.free, m.used = 24 << 30, 20 << 30, 4 << 30
        return 0

    def nvmlDeviceGetName(self, handle, buf, n) -> int:  # noqa: ANN001
        ctypes.memmove(buf, b"Fake RTX\0", 9)
        return 0


def test_nvml_reading_is_mocked_since_no_cuda_device() -> None:
    (gpu,) = hardware.nvidia_gpus(_FakeNvml())  # type: ignore[arg-type]
    assert (gpu.name, gpu.total, gpu.free) == ("Fake RTX", 24 << 30, 20 << 30)


def test_no_nvml_means_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hardware, "_NVML_NAMES", ("libno-such-nvml.so",))
    assert hardware.nvidia_gpus() == ()
    mem = hardware.machine_memory()
    assert mem.ram_available > 0 and mem.vram_free == 0


def test_remote_header_grows_its_range(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    src = write_tiny_gguf(tmp_path / "long.gguf", n_vocab=2000, token_len=40)  # a ~100 KB header
    local = read_header(src)
    hub.add(FakeRepo("o/r", {"long-F32.gguf": FakeFile(src.read_bytes())}))
    remote = fetch_header(client, "o/r", "long-F32.gguf", first=4096)
    # In the order asked: the stand-in records a request once its body is sent, and under load the
    # client may ask for the next range before the server's thread has recorded the last.
    ranges = sorted((s.range for s in hub.gets("long-F32.gguf")), key=lambda r: int(r.split("=")[1].split("-")[0]))
    assert len(ranges) > 2 and ranges[0] == "bytes=0-4095" and ranges[1] == "bytes=4096-12287"
    assert (remote.n_layer, remote.n_params, remote.data_offset) == (local.n_layer, local.n_params, local.data_offset)
    assert hub.bytes_served("long-F32.gguf") < src.stat().st_size


def test_fit_vs_actual_says_how_far_off_the_estimate_was(header) -> None:  # noqa: ANN001
    est = estimate_fit(header, 512, _machine(64 << 30, None))
    text = fit_vs_actual(est, est.weights * 3 // 2, est.kv_cache // 2)
    assert text.startswith("At 512 tokens: weights") and "(+50%)" in text and "(-50%)" in text
    assert text.endswith(f"Predicted: {est.summary()}.")
    assert "Predicted" not in fit_vs_actual(est, est.weights, est.kv_cache, verdict=False)
