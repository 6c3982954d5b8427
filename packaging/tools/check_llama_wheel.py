"""Fails unless a llama-cpp-python wheel (or installed package) is the portable build needed.

    python packaging/tools/check_llama_wheel.py cpu-portable path/to/llama_cpp_python-*.whl
    python packaging/tools/check_llama_wheel.py cpu-portable path/to/site-packages/llama_cpp

A plain `pip install llama-cpp-python` builds for the building machine's CPU and links the CPU
backend into libggml; the installers need the CPU backend as run-time modules, one per
processor generation, so that the app starts on older processors too.
"""

from __future__ import annotations

import re
import sys
import zipfile
from pathlib import Path

LIB = re.compile(r"llama_cpp/lib/((?:lib)?ggml-[\w-]+)\.(?:so|dll|dylib)$")
# The two ends of the x86-64 range: a CPU without AVX must find x64, a new one a wider kernel.
NEEDED_CPU = {"ggml-cpu-x64", "ggml-cpu-sse42", "ggml-cpu-haswell", "ggml-cpu-skylakex"}
NEEDED = {
    "cpu-portable": NEEDED_CPU,
    "cuda": NEEDED_CPU | {"ggml-cuda"},
    "metal": set(),  # Metal is linked into libggml on macOS (GGML_BACKEND_DL is off there)
}


def library_names(path: Path) -> set[str]:
    if path.is_dir():
        names = [p.relative_to(path.parent).as_posix() for p in path.rglob("*")]
    else:
        names = zipfile.ZipFile(path).namelist()
    found = set()
    for name in names:
        m = LIB.search(name)
        if m:
            found.add(m.group(1).removeprefix("lib"))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in NEEDED:
        print(__doc__, file=sys.stderr)
        return 2
    variant, path = argv[0], Path(argv[1])
    found = library_names(path)
    missing = NEEDED[variant] - found
    cpu = sorted(n for n in found if n.startswith("ggml-cpu-"))
    names = " ".join(n.removeprefix("ggml-cpu-") for n in cpu)
    print(f"{path.name}: {len(cpu)} CPU variants: {names}")
    if missing:
        print(f"not a {variant} build: missing {', '.join(sorted(missing))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
