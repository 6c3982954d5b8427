"""Which llama.cpp build this machine gets, and the CUDA build made from PyPI's toolkit wheels.

    python scripts/llama_build.py plan                     # the decision, as one JSON object
    python scripts/llama_build.py install --venv .venv     # the venv's llama-cpp-python made to match it
    python scripts/llama_build.py wheel                    # build (or reuse) the CUDA wheel; prints its path
    python scripts/llama_build.py toolkit                  # the CUDA toolkit folder (nvcc, headers, libs)
    python scripts/llama_build.py runtime                  # the runtime wheels a CUDA build needs, for pip

Where `nvidia-smi` answers with the GPUs' compute capabilities (and a driver new enough for
CUDA 13), llama-cpp-python is built with CUDA for those architectures; elsewhere the CPU build
that `pip install -e .` gives is left as it is. The environment (or `make run CUDA=0|1
CUDA_ARCHS="86 90"`) overrides: CUDA=0 always the CPU build, CUDA=1 the CUDA build even when no
GPU answers (for CUDA_ARCHS, or sm_90). The script takes them as --cuda and $CUDA_ARCHS.

The CUDA toolkit is never installed on the system: NVIDIA's wheels (nvcc 13.5, the runtime,
cuBLAS, CCCL) go into a build-only venv in the cache folder. The wheel built with them is kept in
a folder of its own per variant, architectures and llama-cpp-python version, because pip's wheel
cache tells builds apart by their source only, not by CMAKE_ARGS: a CUDA wheel there would be
handed to the next CPU install. The app's venv gets that wheel and the two runtime wheels
(libcudart, libcublas); prefill loads those libraries itself before llama_cpp (cuda_libs.py).

Standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

TOOLKIT = "13.5.37"
CUBLAS = "13.10.0.20"
TOOLKIT_WHEELS = (
    f"nvidia-cuda-nvcc=={TOOLKIT}", f"nvidia-cuda-runtime=={TOOLKIT}", f"nvidia-cuda-crt=={TOOLKIT}",
    f"nvidia-nvvm=={TOOLKIT}", f"nvidia-cublas=={CUBLAS}", "nvidia-cuda-cccl==13.3.5.0.6",
)
# What a CUDA build of llama.cpp loads at run time (the driver's libcuda comes with the driver).
RUNTIME_WHEELS = (f"nvidia-cuda-runtime=={TOOLKIT}", f"nvidia-cublas=={CUBLAS}")
LLAMA_VERSION = "0.3.36"  # the version built when the venv has none yet
DEFAULT_ARCH = "90"  # CUDA=1 with no GPU answering and no CUDA_ARCHS
MIN_DRIVER = 580  # CUDA 13's runtime refuses older drivers ("driver version is insufficient")
MIN_ARCH = 75  # CUDA 13 compiles for Turing (sm_75) and newer only
MARKER = ".llama-build"  # in the app's venv: the cache key of the CUDA build installed there
# -DGGML_CUDA_NO_VMM=ON: ggml's virtual memory pool links libcuda.so, which only a driver brings.
# GGML_NATIVE=OFF: the wheel may be reused on another machine (a lent GPU machine, an installer).
CUDA_FLAGS = "-DGGML_CUDA=ON -DGGML_CUDA_NO_VMM=ON -DGGML_NATIVE=OFF"
_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]")


class BuildError(Exception):
    """A step of the CUDA build failed; the message says which and where its log is."""


@dataclass(frozen=True)
class Gpus:
    """What nvidia-smi said: the distinct architectures ("86", "90") and the oldest driver's major."""

    arches: tuple[str, ...]
    driver: int  # 0 when not given


@dataclass(frozen=True)
class Plan:
    variant: str  # "cpu" or "cuda"
    arches: tuple[str, ...]  # CUDA architectures, sorted; () for the CPU
    reason: str  # one line for the person at the terminal
    forced: bool = False  # CUDA=0 or CUDA=1 said so (only then is an installed CUDA build replaced)

    def key(self, version: str) -> str:
        return cache_key(self.variant, self.arches, version)


def cache_key(variant: str, arches: tuple[str, ...], version: str) -> str:
    """The wheel folder's name: a build differs by variant, architectures and llama-cpp-python version."""
    return f"{variant}-{'+'.join(arches)}-{version}" if arches else f"{variant}-{version}"


def parse_arch(text: str) -> str | None:
    """"8.6", "86", "sm_86" → "86"; anything else → None."""
    t = text.strip().lower().removeprefix("sm_")
    m = re.fullmatch(r"(\d{1,2})\.(\d)", t) or re.fullmatch(r"(\d{1,2})(\d)", t)
    return f"{int(m.group(1))}{m.group(2)}" if m else None


def _sorted(arches: set[str]) -> tuple[str, ...]:
    return tuple(sorted(arches, key=int))


def parse_gpus(text: str) -> Gpus:
    """`nvidia-smi --query-gpu=compute_cap,driver_version --format=csv,noheader`: a line per GPU,
    "9.0, 580.65.06". Lines that are not that (errors, "[N/A]") are skipped."""
    arches: set[str] = set()
    drivers: list[int] = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        arch = parse_arch(fields[0]) if "." in fields[0] else None
        if arch is None:
            continue
        arches.add(arch)
        if len(fields) > 1 and re.match(r"\d+\.", fields[1]):
            drivers.append(int(fields[1].split(".")[0]))
    return Gpus(_sorted(arches), min(drivers, default=0))


def query_gpus(smi: str = "nvidia-smi") -> Gpus | None:
    """The GPUs nvidia-smi reports; None when there is no nvidia-smi or it fails (no driver loaded)."""
    exe = shutil.which(smi)
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "--query-gpu=compute_cap,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_gpus(done.stdout) if done.returncode == 0 else None


def parse_arch_list(text: str) -> tuple[str, ...]:
    """CUDA_ARCHS: "86 90", "86;90", "8.6,9.0" or "sm_90"."""
    arches = set()
    for part in re.split(r"[\s,;]+", text.strip()):
        if not part:
            continue
        arch = parse_arch(part)
        if arch is None:
            raise ValueError(f"not a CUDA architecture: {part!r} (write 86 or 8.6)")
        arches.add(arch)
    return _sorted(arches)


def _sm(arches: tuple[str, ...]) -> str:
    return ", ".join(f"sm_{a}" for a in arches)


def decide(cuda: str, gpus: Gpus | None, arch_override: tuple[str, ...] = ()) -> Plan:
    """The build for this machine. `cuda`: "" (decide), "0" or "1" (make run CUDA=…)."""
    if cuda not in ("", "0", "1"):
        raise ValueError(f"CUDA={cuda}: write CUDA=0 (the CPU build) or CUDA=1 (the CUDA build)")
    if cuda == "0":
        return Plan("cpu", (), "CUDA=0: the CPU build", forced=True)
    usable = tuple(a for a in gpus.arches if int(a) >= MIN_ARCH) if gpus else ()
    if cuda == "1":
        arches = arch_override or usable or (DEFAULT_ARCH,)
        if arch_override:
            why = f"CUDA=1 for CUDA_ARCHS ({_sm(arches)})"
        elif usable:
            why = f"CUDA=1 for this machine's GPU ({_sm(arches)})"
        else:
            why = f"CUDA=1 but no GPU answered nvidia-smi: built for {_sm(arches)} (set CUDA_ARCHS for yours)"
        return Plan("cuda", arches, why, forced=True)
    if gpus is None:
        return Plan("cpu", (), "no NVIDIA driver found (nvidia-smi): the CPU build")
    if not gpus.arches:
        return Plan("cpu", (), "nvidia-smi answered without a compute capability: the CPU build "
                               "(make run CUDA=1 CUDA_ARCHS=<yours> builds for the GPU anyway)")
    if not usable:
        return Plan("cpu", (), f"the GPU ({_sm(gpus.arches)}) is older than CUDA 13 supports "
                               f"(sm_{MIN_ARCH} or newer): the CPU build")
    if 0 < gpus.driver < MIN_DRIVER:
        return Plan("cpu", (), f"the NVIDIA driver ({gpus.driver}) is older than CUDA 13 needs ({MIN_DRIVER} "
                               "or later): the CPU build; after updating it, make run builds for the GPU")
    arches = arch_override or usable
    return Plan("cuda", arches, f"NVIDIA GPU found: the CUDA build for {_sm(arches)}")


# --- folders ---------------------------------------------------------------------------------


def cache_root() -> Path:
    """PREFILL_BUILD_CACHE, else the user's cache folder: a 30-minute build outlives `make clean`."""
    if os.environ.get("PREFILL_BUILD_CACHE"):
        return Path(os.environ["PREFILL_BUILD_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prefill"


def wheel_folder(key: str) -> Path:
    return cache_root() / "llama-wheels" / key


def cached_wheel(key: str) -> Path | None:
    wheels = sorted(wheel_folder(key).glob("llama_cpp_python-*.whl"))
    return wheels[-1] if wheels else None


def toolkit_venv() -> Path:
    return cache_root() / f"cuda-build-{TOOLKIT}"


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def link_for_cmake(cu13: Path) -> None:
    """CMake's FindCUDAToolkit looks for libcudart.so and lib64/; the wheels have libcudart.so.13 in lib/."""
    lib = cu13 / "lib"
    for versioned in lib.glob("lib*.so.*"):
        m = re.fullmatch(r"(lib[\w+-]+\.so)\.\d+", versioned.name)
        if m and not (lib / m.group(1)).exists():
            (lib / m.group(1)).symlink_to(versioned.name)
    if not (cu13 / "lib64").exists():
        (cu13 / "lib64").symlink_to("lib")


def ensure_toolkit(python: str = sys.executable) -> Path:
    """The build-only venv with NVIDIA's toolkit wheels; returns its nvidia/cu13 folder."""
    venv = toolkit_venv()
    stamp = venv / ".installed"
    if not stamp.exists():
        print(f"llama.cpp: installing the CUDA {TOOLKIT} toolkit wheels into {venv} (build only, about 1 GB)",
              file=sys.stderr, flush=True)
        _run([python, "-m", "venv", str(venv)])
        _run([str(_venv_python(venv)), "-m", "pip", "install", "--upgrade", "pip"])
        _run([str(_venv_python(venv)), "-m", "pip", "install", *TOOLKIT_WHEELS])
    found = sorted(venv.glob("lib*/python3*/site-packages/nvidia/cu13")) or sorted(
        venv.glob("Lib/site-packages/nvidia/cu13"))
    if not found or not (found[0] / "bin").is_dir():
        raise BuildError(f"the toolkit wheels in {venv} have no nvidia/cu13/bin: delete that folder and retry")
    link_for_cmake(found[0])
    stamp.touch()
    return found[0]


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    """Run a step; its output is diagnostics (stderr), so `toolkit` and `wheel` print only their path."""
    if subprocess.call(cmd, env=env, stdout=sys.stderr) != 0:
        raise BuildError(f"failed: {' '.join(cmd)}")


# --- the CUDA wheel --------------------------------------------------------------------------


def cmake_args(arches: tuple[str, ...], cu13: Path) -> str:
    return (f"{CUDA_FLAGS} -DCMAKE_CUDA_ARCHITECTURES={';'.join(arches)} -DCUDAToolkit_ROOT={cu13} "
            f"-DCMAKE_CUDA_COMPILER={cu13 / 'bin' / 'nvcc'}")


def has_cuda_backend(wheel: Path) -> bool:
    return any(re.search(r"llama_cpp/lib/(lib)?ggml-cuda\.(so|dll)", n) for n in zipfile.ZipFile(wheel).namelist())


def build_wheel(plan: Plan, version: str, python: str = sys.executable) -> Path:
    """The CUDA wheel for `plan`, from its cache folder or built there (~35 min per architecture on 2 cores)."""
    key = plan.key(version)
    found = cached_wheel(key)
    if found is not None:
        print(f"llama.cpp: reusing {found}", file=sys.stderr, flush=True)
        return found
    cu13 = ensure_toolkit(python)
    folder = wheel_folder(key)
    partial = folder / "partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    env = dict(os.environ, CUDA_HOME=str(cu13), CMAKE_ARGS=cmake_args(plan.arches, cu13),
               PATH=f"{cu13 / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               PIP_CACHE_DIR=str(folder / "pip-cache"))
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    cmd = [python, "-m", "pip", "wheel", f"llama-cpp-python=={version}", "--no-deps",
           "--no-binary", "llama-cpp-python", "-w", str(partial), "-v"]
    if os.environ.get("BUILD_NICE"):  # a shared machine: the build yields to everyone else
        cmd = ["nice", "-n", os.environ["BUILD_NICE"], *cmd]
    log_path = folder / "build.log"
    print(f"llama.cpp: building llama-cpp-python {version} with CUDA for {_sm(plan.arches)} "
          f"({env['CMAKE_BUILD_PARALLEL_LEVEL']} jobs; about 35 min per architecture on 2 cores, "
          f"once); log: {log_path}", file=sys.stderr, flush=True)
    start = time.monotonic()
    with open(log_path, "w") as log:
        log.write(f"CMAKE_ARGS={env['CMAKE_ARGS']}\n")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            m = _STEP.match(line)
            if m:
                _progress(int(m.group(1)), int(m.group(2)), time.monotonic() - start)
        rc = proc.wait()
    print(file=sys.stderr, flush=True)
    wheels = sorted(partial.glob("llama_cpp_python-*.whl"))
    if rc != 0 or not wheels:
        raise BuildError(f"the CUDA build of llama-cpp-python failed (exit {rc}); see {log_path} "
                         "(make run CUDA=0 keeps the CPU build)")
    if not has_cuda_backend(wheels[0]):
        raise BuildError(f"{wheels[0].name} has no CUDA backend (libggml-cuda); see {log_path}")
    final = folder / wheels[0].name
    wheels[0].replace(final)
    shutil.rmtree(partial, ignore_errors=True)
    print(f"llama.cpp: built in {(time.monotonic() - start) / 60:.0f} min: {final}", file=sys.stderr, flush=True)
    return final


def _progress(step: int, total: int, seconds: float) -> None:
    text = f"  step {step}/{total}, {seconds / 60:.0f} min"
    if sys.stderr.isatty():
        print(f"\r{text}", end="", file=sys.stderr, flush=True)
    elif step % 25 == 0 or step == total:
        print(text, file=sys.stderr, flush=True)


# --- the app's venv --------------------------------------------------------------------------


def installed_version(python: Path) -> str | None:
    """llama-cpp-python's version in the venv of `python`, None when it is not installed."""
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('llama-cpp-python'))"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def install(venv: Path, plan: Plan, python: str = sys.executable) -> str:
    """Make the venv's llama-cpp-python the build `plan` names. A CPU plan leaves pip's build alone, and
    replaces an installed CUDA build only when forced (CUDA=0). Returns what was done, in words."""
    vpy = _venv_python(venv)
    marker = venv / MARKER
    current = marker.read_text().strip() if marker.exists() else ""
    version = os.environ.get("LLAMA_CPP_VERSION") or installed_version(vpy) or LLAMA_VERSION
    if plan.variant == "cpu":
        if not current:
            return f"llama.cpp: {plan.reason}"
        if not plan.forced:  # a GPU that stopped answering: the CUDA build stays and says why it runs on the CPU
            return f"llama.cpp: {plan.reason}; keeping the CUDA build {current} (make run CUDA=0 replaces it)"
        _run([str(vpy), "-m", "pip", "install", "--force-reinstall", "--no-deps", f"llama-cpp-python=={version}"])
        _run([str(vpy), "-m", "pip", "uninstall", "-y", *(w.split("==")[0] for w in RUNTIME_WHEELS)])
        marker.unlink()
        return f"llama.cpp: {plan.reason} (replaced the CUDA build {current})"
    key = plan.key(version)
    if current == key:
        return f"llama.cpp: {plan.reason} (installed)"
    wheel = build_wheel(plan, version, str(vpy) if vpy.exists() else python)
    # --force-reinstall: a CPU build of the same version is "already satisfied" for pip.
    _run([str(vpy), "-m", "pip", "install", "--force-reinstall", "--no-deps", str(wheel)])
    _run([str(vpy), "-m", "pip", "install", str(wheel), *RUNTIME_WHEELS])
    marker.write_text(key + "\n")
    return f"llama.cpp: {plan.reason} (installed {wheel.name})"


def current_plan(cuda: str = "", archs: str | None = None) -> Plan:
    archs = os.environ.get("CUDA_ARCHS", "") if archs is None else archs
    override = parse_arch_list(archs) if archs else ()
    gpus = query_gpus() if cuda != "0" else None
    return decide(cuda.strip(), gpus, override)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("plan", "install", "wheel", "toolkit", "runtime"))
    parser.add_argument("--venv", type=Path, default=Path(".venv"), help="the app's venv (install)")
    parser.add_argument("--cuda", default="", help="0 or 1; default: decided from nvidia-smi")
    parser.add_argument("--arch", help='CUDA architectures, "86 90"; default: $CUDA_ARCHS, else the GPUs\'')
    parser.add_argument("--version", help="llama-cpp-python version (wheel); default: " + LLAMA_VERSION)
    args = parser.parse_args(argv)
    try:
        if args.command == "toolkit":
            print(ensure_toolkit())
            return 0
        if args.command == "runtime":
            print(" ".join(RUNTIME_WHEELS))
            return 0
        plan = current_plan(args.cuda, args.arch)
        version = args.version or os.environ.get("LLAMA_CPP_VERSION") or LLAMA_VERSION
        if args.command == "plan":
            cached = cached_wheel(plan.key(version)) if plan.variant == "cuda" else None
            print(json.dumps({**asdict(plan), "key": plan.key(version), "wheel": str(cached or "")}))
        elif args.command == "wheel":
            if plan.variant != "cuda":
                print(f"llama.cpp: {plan.reason}; CUDA=1 builds the CUDA wheel anyway", file=sys.stderr)
                return 1
            print(build_wheel(plan, version))
        else:
            print(install(args.venv, plan), flush=True)
    except (BuildError, ValueError) as e:
        print(f"llama_build: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
