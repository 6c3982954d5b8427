"""llama.cpp's own server, built from the llama.cpp that the installed llama-cpp-python vendors.

The sdist of the installed version (PyPI's, the same source the wheel was built from) is fetched
once, and only the `llama-server` target is built, with CMake's defaults for the CPU (GGML_NATIVE on,
as pip's build of llama-cpp-python here) unless `--cmake-args` says more. The build lives in
~/.cache/prefill-bench/llama-server/<version>-<flags digest>/ and is reused while it is there;
a fresh build takes about 10 minutes on 2 cores.

    python benchmarks/llama_server_build.py [--cmake-args "-DGGML_CUDA=ON"]   # prints its path
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CACHE = Path.home() / ".cache" / "prefill-bench" / "llama-server"
BASE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF",
              "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF")


def folder(version: str, cmake_args: str) -> Path:
    digest = hashlib.sha256(" ".join((*BASE_FLAGS, cmake_args)).encode()).hexdigest()[:10]
    return CACHE / f"{version}-{digest}"


def binary(version: str, cmake_args: str = "") -> Path:
    return folder(version, cmake_args) / "llama.cpp" / "build" / "bin" / "llama-server"


def sdist_source(version: str, into: Path) -> Path:
    """llama-cpp-python's sdist for `version`, its vendored llama.cpp moved to `into`/llama.cpp."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={version}", "-d", tmp], check=True, stdout=subprocess.DEVNULL)
        (archive,) = Path(tmp).glob("llama_cpp_python-*.tar.gz")
        prefix = f"{archive.name.removesuffix('.tar.gz')}/vendor/llama.cpp/"
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
            tar.extractall(tmp, members=members, filter="data")
        into.mkdir(parents=True, exist_ok=True)
        shutil.move(str(Path(tmp) / prefix), str(into / "llama.cpp"))
    return into / "llama.cpp"


def build(cmake_args: str = "", log=sys.stderr) -> Path:  # type: ignore[no-untyped-def]
    """The cached llama-server for the installed llama-cpp-python, built first if it is not there."""
    version = importlib.metadata.version("llama-cpp-python")
    exe = binary(version, cmake_args)
    if exe.exists():
        return exe
    home = folder(version, cmake_args)
    shutil.rmtree(home, ignore_errors=True)
    print(f"building llama-server {version} in {home} (about 10 minutes on 2 cores)…", file=log, flush=True)
    src = sdist_source(version, home)
    subprocess.run(["cmake", "-S", str(src), "-B", str(src / "build"), *BASE_FLAGS, *cmake_args.split()],
                   check=True, stdout=subprocess.DEVNULL)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["cmake", "--build", str(src / "build"), "--target", "llama-server", "-j", jobs], check=True,
                   stdout=subprocess.DEVNULL)
    return exe


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cmake-args", default="", help="more CMake flags (they name a build of their own)")
    print(build(ap.parse_args().cmake_args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
