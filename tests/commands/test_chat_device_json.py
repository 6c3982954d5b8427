"""`prefill chat --json` says where the model ran: layers offloaded, the device, GPU memory taken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from prefill.commands.chat import device_json
from prefill.engine.llama.offload import DeviceReport
from prefill.session.loaded import LoadedModel

ROOT = Path(__file__).resolve().parents[2]


def loaded(device: DeviceReport | None) -> LoadedModel:
    return LoadedModel(path=Path("m.gguf"), name="m", n_ctx=256, n_layer=30, backend_summary="", backend_warning="",
                       gpu_build=device is not None and device.gpu_build, load_ms=1.0, bytes_per_cell=1,
                       model_bytes=1, device=device)


def test_each_json_turn_carries_the_device(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    out = subprocess.run([sys.executable, "-m", "prefill", "chat", "--model", "bundled", "--prompt", "Hi",
                          "--prompt", "Bye", "--json", "--max-tokens", "3", "--ctx", "512", "--gpu-layers", "none",
                          "--threads", "1"], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    turns = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(turns) == 2
    for t in turns:
        assert (t["gpu_layers"], t["total_layers"], t["device"], t["vram_bytes"]) == (0, 31, "CPU", 0)
        assert t["flash_attn"] is True  # "auto", as llama.cpp's CPU backend resolves it


def test_a_gpu_load_and_a_remote_endpoint() -> None:
    gpu = DeviceReport(True, "all", 31, 31, "CUDA0 (NVIDIA H200)", vram_bytes=371 << 20)
    assert device_json(loaded(gpu)) == {"gpu_layers": 31, "total_layers": 31, "device": "CUDA0 (NVIDIA H200)",
                                        "vram_bytes": 371 << 20, "flash_attn": None}
    unknown = DeviceReport(True, "all", 31, 31, "Metal")  # a log without buffer sizes: unknown, not 0
    assert device_json(loaded(unknown))["vram_bytes"] is None
    assert set(device_json(loaded(None)).values()) == {None}  # a remote endpoint's device is not visible
