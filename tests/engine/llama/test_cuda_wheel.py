"""A CUDA build of llama.cpp made by scripts/llama_build.py, installed in a venv of its own on this
machine (no GPU, no driver): it imports, says "CUDA build, no GPU found" and chats on the CPU.

Skipped where no such wheel was built (CI): the build takes half an hour or more. Point
PREFILL_CUDA_WHEEL at a wheel, or let the test find one in the build script's cache folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def cuda_wheel() -> Path | None:
    if os.environ.get("PREFILL_CUDA_WHEEL"):
        return Path(os.environ["PREFILL_CUDA_WHEEL"])
    cache = os.environ.get("PREFILL_BUILD_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "prefill")
    wheels = sorted(Path(cache).glob("llama-wheels/cuda-*/llama_cpp_python-*.whl"))
    return wheels[-1] if wheels else None


def runtime_wheels() -> list[str]:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "llama_build.py"), "runtime"],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.fixture(scope="module")
def cuda_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway venv holding the CUDA wheel and the CUDA runtime wheels, as `make run` installs
    them; everything else (numpy, PySide6…) and the app come from this venv and app/, after them."""
    wheel = cuda_wheel()
    if wheel is None or not wheel.exists():
        pytest.skip("no CUDA build of llama-cpp-python here (make run CUDA=1 builds one)")
    home = tmp_path_factory.mktemp("cuda-venv")
    venv.EnvBuilder(with_pip=True).create(home)
    python = home / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel), *runtime_wheels()],
                   check=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # A .pth appends after the venv's own site-packages: its llama_cpp (CUDA) comes first.
    (Path(site) / "prefill_test_paths.pth").write_text(f"{ROOT / 'app'}\n{ours}\n")
    return python


def run(python: Path, *args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(XDG_DATA_HOME=str(tmp / "data"), XDG_CONFIG_HOME=str(tmp / "config"), QT_QPA_PLATFORM="offscreen")
    return subprocess.run([str(python), *args], capture_output=True, text=True, env=env, timeout=600, check=False)


def test_the_cuda_build_needs_the_preload_and_gets_it(cuda_python: Path, tmp_path: Path) -> None:
    bare = run(cuda_python, "-c", "import llama_cpp", tmp=tmp_path)
    if bare.returncode == 0:
        pytest.skip("this machine's loader finds the CUDA libraries by itself (a system CUDA 13)")
    assert "libcublas.so.13" in bare.stderr or "libcudart.so.13" in bare.stderr, bare.stderr[-500:]
    # A bench module first: it imports llama_cpp before any engine module does.
    probe = ("import prefill.bench.lean_loop, llama_cpp, json\n"
             "from prefill.engine import cuda_libs\n"
             "maps = open('/proc/self/maps').read()\n"
             "print(json.dumps({'cuda_build': cuda_libs.is_cuda_build(), 'llama': llama_cpp.__file__,\n"
             "  'loaded': [p.name for p in cuda_libs.preload()], 'ggml_cuda': 'libggml-cuda' in maps,\n"
             "  'offload': bool(llama_cpp.llama_supports_gpu_offload())}))\n")
    done = run(cuda_python, "-c", probe, tmp=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    r = json.loads(done.stdout.splitlines()[-1])
    assert r["cuda_build"] and str(cuda_python.parent.parent) in r["llama"]
    assert r["loaded"] == ["libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13"]
    assert r["ggml_cuda"] and not r["offload"]  # the CUDA backend is there, with no device to use


def test_it_says_no_gpu_found_and_chats_on_the_cpu(cuda_python: Path, smollm2: Path, tmp_path: Path) -> None:
    done = run(cuda_python, "-m", "prefill", "chat", "--model", str(smollm2), "--prompt", "What is 2+2?", "--json",
               "--max-tokens", "8", "--ctx", "512", "--temperature", "0", "--threads", "2", tmp=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "prefill: CUDA build, no GPU found: running on the CPU" in done.stderr.splitlines()
    turn = json.loads(done.stdout.splitlines()[-1])
    assert turn["completion_tokens"] > 0 and turn["answer"].strip()
    assert (turn["gpu_layers"], turn["device"], turn["vram_bytes"]) == (0, "CPU", 0)
