"""scripts/llama_build.py: which llama.cpp build a machine gets, decided from a fake nvidia-smi."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "llama_build.py"
CAT = shutil.which("cat")


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llama_build", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["llama_build"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


lb = _load()


def fake_smi(folder: Path, output: str, rc: int = 0) -> Path:
    """An `nvidia-smi` on `folder` that prints `output` and exits with `rc`, whatever it is asked."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "answer.txt").write_text(output)
    exe = folder / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\n{CAT} '{folder / 'answer.txt'}'\nexit {rc}\n")  # PATH holds only this folder
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.fixture
def smi_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Point PATH at a folder holding only the fake nvidia-smi; returns a setter for its answer."""
    folder = tmp_path / "bin"

    def answer(output: str | None, rc: int = 0) -> None:
        folder.mkdir(exist_ok=True)
        if output is None:
            (folder / "nvidia-smi").unlink(missing_ok=True)
        else:
            fake_smi(folder, output, rc)
        monkeypatch.setenv("PATH", str(folder))

    return answer


def test_no_nvidia_smi_or_a_failing_one_means_the_cpu_build(smi_path) -> None:
    smi_path(None)
    assert lb.query_gpus() is None
    plan = lb.current_plan()
    assert plan.variant == "cpu" and plan.arches == () and "no NVIDIA driver" in plan.reason
    # A driver installed but not loaded: nvidia-smi exists and fails.
    smi_path("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", rc=9)
    assert lb.query_gpus() is None
    assert lb.current_plan().variant == "cpu"


def test_one_gpu_gets_the_cuda_build_for_its_compute_capability(smi_path) -> None:
    smi_path("9.0, 580.65.06\n")
    assert lb.query_gpus() == lb.Gpus(("90",), 580)
    plan = lb.current_plan()
    assert plan == lb.Plan("cuda", ("90",), "NVIDIA GPU found: the CUDA build for sm_90")
    assert plan.key("0.3.36") == "cuda-90-0.3.36"


def test_several_gpus_give_each_distinct_architecture_once(smi_path) -> None:
    smi_path("8.6, 590.12\n12.0, 590.12\n8.6, 590.12\n")
    plan = lb.current_plan()
    assert plan.variant == "cuda" and plan.arches == ("86", "120")
    assert plan.key("0.3.36") == "cuda-86+120-0.3.36"


def test_garbage_lines_are_skipped_and_only_garbage_means_the_cpu(smi_path) -> None:
    assert lb.parse_gpus("[N/A], 580.1\nsome warning\n8.9, 580.1\n\n90\n").arches == ("89",)
    smi_path("[N/A], [N/A]\nField \"compute_cap\" is not a valid field to query.\n")
    plan = lb.current_plan()
    assert plan.variant == "cpu" and "without a compute capability" in plan.reason
    assert "CUDA=1" in plan.reason  # and how to build for the GPU anyway


def test_a_driver_too_old_for_cuda_13_or_a_gpu_too_old_keeps_the_cpu_build(smi_path) -> None:
    smi_path("8.9, 550.54.14\n")
    plan = lb.current_plan()
    assert plan.variant == "cpu" and "older than CUDA 13 needs (580 or later)" in plan.reason
    assert lb.current_plan("1").arches == ("89",)  # CUDA=1 still builds it, for that GPU
    smi_path("6.1, 580.1\n")  # a Pascal card: CUDA 13 compiles for sm_75 and newer only
    assert lb.current_plan().variant == "cpu"
    assert "older than CUDA 13 supports" in lb.current_plan().reason


def test_cuda_0_and_1_override_what_nvidia_smi_says(smi_path) -> None:
    smi_path("9.0, 580.65.06\n")
    assert lb.current_plan("0") == lb.Plan("cpu", (), "CUDA=0: the CPU build", forced=True)
    smi_path(None)
    plan = lb.current_plan("1")
    assert plan.variant == "cuda" and plan.arches == ("90",)
    assert "no GPU answered nvidia-smi" in plan.reason and "CUDA_ARCHS" in plan.reason  # said, not silent
    assert lb.current_plan("1", "8.6;sm_89 90").arches == ("86", "89", "90")
    with pytest.raises(ValueError, match="CUDA=yes"):
        lb.current_plan("yes")
    with pytest.raises(ValueError, match="not a CUDA architecture"):
        lb.parse_arch_list("86 ampere")


def test_cache_key_tells_variant_architectures_and_version_apart() -> None:
    keys = {lb.cache_key("cuda", ("90",), "0.3.36"), lb.cache_key("cuda", ("89",), "0.3.36"),
            lb.cache_key("cuda", ("89", "90"), "0.3.36"), lb.cache_key("cuda", ("90",), "0.3.37"),
            lb.cache_key("cpu", (), "0.3.36")}
    assert len(keys) == 5
    assert lb.cache_key("cpu", (), "0.3.36") == "cpu-0.3.36"


def test_the_plan_command_prints_one_json_object(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(fake_smi(tmp_path / "bin", "8.9, 590.1\n")), PREFILL_BUILD_CACHE=str(tmp_path))
    out = subprocess.run([sys.executable, str(SCRIPT), "plan"], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {"variant": "cuda", "arches": ["89"], "key": "cuda-89-0.3.36", "wheel": "",
                                      "reason": "NVIDIA GPU found: the CUDA build for sm_89", "forced": False}


def test_make_passes_cuda_from_its_command_line_only() -> None:
    """`make run CUDA=1` reaches the script; a CUDA variable in the shell (a toolkit folder) does not."""
    # A make that runs these tests (`make test CUDA=0`) hands its command line down through MAKEFLAGS.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    env["CUDA"] = "/usr/local/cuda"
    dry = subprocess.run(["make", "-n", "llama", "CUDA=1"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert 'scripts/llama_build.py install --venv .venv --cuda "1"' in dry.stdout
    dry = subprocess.run(["make", "-n", "llama"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert "scripts/llama_build.py install --venv .venv" in dry.stdout and "--cuda" not in dry.stdout


def _fake_wheel(path: Path, cuda: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("llama_cpp/__init__.py", "")
        if cuda:
            z.writestr("llama_cpp/lib/libggml-cuda.so", "")
    return path


class Pip:
    """Records the commands install() would run instead of running them."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.calls.append(cmd)


@pytest.fixture
def venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PREFILL_BUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LLAMA_CPP_VERSION", raising=False)
    v = tmp_path / "venv"
    v.mkdir()
    return v  # no bin/python: installed_version() is None, so the default version is built


def test_install_leaves_the_cpu_build_to_pip(venv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pip = Pip()
    monkeypatch.setattr(lb, "_run", pip)
    said = lb.install(venv, lb.Plan("cpu", (), "no NVIDIA driver found (nvidia-smi): the CPU build"))
    assert pip.calls == [] and said.endswith("the CPU build")


def test_install_puts_the_cached_cuda_wheel_and_the_runtime_wheels_in_the_venv(
    venv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pip = Pip()
    monkeypatch.setattr(lb, "_run", pip)
    monkeypatch.setattr(lb, "ensure_toolkit", lambda python=None: pytest.fail("a cached wheel needs no toolkit"))
    wheel = _fake_wheel(lb.wheel_folder("cuda-90-0.3.36") / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl")
    plan = lb.Plan("cuda", ("90",), "NVIDIA GPU found: the CUDA build for sm_90")
    said = lb.install(venv, plan)
    assert "installed llama_cpp_python-0.3.36" in said
    assert pip.calls[0][-3:] == ["--force-reinstall", "--no-deps", str(wheel)]  # over a CPU build of one version
    assert pip.calls[1][-3:] == [str(wheel), *lb.RUNTIME_WHEELS]
    assert (venv / lb.MARKER).read_text().strip() == "cuda-90-0.3.36"
    pip.calls.clear()
    assert lb.install(venv, plan).endswith("(installed)") and pip.calls == []  # the next make run: nothing
    # A new GPU: another key, another build (here: another cached wheel).
    _fake_wheel(lb.wheel_folder("cuda-120-0.3.36") / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl")
    lb.install(venv, lb.Plan("cuda", ("120",), "x"))
    assert (venv / lb.MARKER).read_text().strip() == "cuda-120-0.3.36" and len(pip.calls) == 2
    # nvidia-smi not answering one day: the CUDA build stays (and the app says why it runs on the CPU).
    pip.calls.clear()
    said = lb.install(venv, lb.Plan("cpu", (), "no NVIDIA driver found (nvidia-smi): the CPU build"))
    assert "keeping the CUDA build cuda-120-0.3.36" in said and pip.calls == [] and (venv / lb.MARKER).exists()
    # CUDA=0: pip's CPU build back, the runtime wheels out.
    said = lb.install(venv, lb.Plan("cpu", (), "CUDA=0: the CPU build", forced=True))
    assert "replaced the CUDA build cuda-120-0.3.36" in said and not (venv / lb.MARKER).exists()
    assert pip.calls[0][-3:] == ["--force-reinstall", "--no-deps", "llama-cpp-python==0.3.36"]
    assert pip.calls[1][-2:] == ["nvidia-cuda-runtime", "nvidia-cublas"]


def test_a_wheel_without_the_cuda_backend_is_told_apart(tmp_path: Path) -> None:
    assert lb.has_cuda_backend(_fake_wheel(tmp_path / "a.whl"))
    assert not lb.has_cuda_backend(_fake_wheel(tmp_path / "b.whl", cuda=False))


def test_toolkit_libraries_get_the_names_cmake_looks_for(tmp_path: Path) -> None:
    cu13 = tmp_path / "nvidia" / "cu13"
    (cu13 / "lib").mkdir(parents=True)
    for name in ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnvrtc-builtins.so.13.5"):
        (cu13 / "lib" / name).write_bytes(b"")
    lb.link_for_cmake(cu13)
    lb.link_for_cmake(cu13)  # twice: the second run finds them there
    lib = cu13 / "lib"
    assert os.readlink(lib / "libcudart.so") == "libcudart.so.13"
    assert os.readlink(lib / "libcublasLt.so") == "libcublasLt.so.13"
    assert (cu13 / "lib64" / "libcublas.so").exists()
    assert "-DCMAKE_CUDA_ARCHITECTURES=86;90" in lb.cmake_args(("86", "90"), cu13)


FAKE_PIP = """#!{python}
# Stands in for `python -m pip wheel ... -w DIR`: prints ninja's progress, writes the wheel, checks the flags.
import os, sys, zipfile
args = sys.argv[1:]
out = args[args.index("-w") + 1]
assert "-DCMAKE_CUDA_ARCHITECTURES=86;90" in os.environ["CMAKE_ARGS"], os.environ["CMAKE_ARGS"]
assert os.environ["PIP_CACHE_DIR"].endswith("cuda-86+90-0.3.36/pip-cache")  # never pip's shared cache
for i in range(1, 4):
    print(f"  [{{i}}/3] nvcc ...", flush=True)
if os.environ.get("FAIL"):
    sys.exit(1)
with zipfile.ZipFile(os.path.join(out, "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"), "w") as z:
    z.writestr("llama_cpp/lib/libggml-cuda.so", "")
"""


def test_a_build_lands_in_its_key_folder_and_a_failure_names_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PREFILL_BUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(lb, "ensure_toolkit", lambda python=None: tmp_path / "cu13")
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PIP.format(python=sys.executable))
    fake.chmod(0o755)
    plan = lb.Plan("cuda", ("86", "90"), "CUDA=1 for CUDA_ARCHS (sm_86, sm_90)")
    monkeypatch.setenv("FAIL", "1")
    with pytest.raises(lb.BuildError, match="build.log"):
        lb.build_wheel(plan, "0.3.36", str(fake))
    assert lb.cached_wheel("cuda-86+90-0.3.36") is None  # a failed build leaves nothing to reuse
    monkeypatch.delenv("FAIL")
    wheel = lb.build_wheel(plan, "0.3.36", str(fake))
    assert wheel.parent == lb.wheel_folder("cuda-86+90-0.3.36") and lb.cached_wheel("cuda-86+90-0.3.36") == wheel
    assert "[3/3]" in (wheel.parent / "build.log").read_text()
    assert "step 3/3" in capsys.readouterr().err
    assert lb.build_wheel(plan, "0.3.36", str(fake)) == wheel  # the next time: reused, not rebuilt
