"""The CUDA runtime libraries a CUDA build of llama.cpp links, made findable before it loads.

A CUDA build made by scripts/llama_build.py links `libcudart.so.13` and `libcublas.so.13`, which
come from NVIDIA's wheels (nvidia-cuda-runtime, nvidia-cublas) in site-packages/nvidia/cu13/lib,
where the dynamic loader never looks. As PyTorch does for the same wheels, they are loaded here
by full path with RTLD_GLOBAL, so that the loader finds them already loaded (by soname) when
`import llama_cpp` opens libggml-cuda: no LD_LIBRARY_PATH, nothing outside the venv. A CPU build
has no libggml-cuda: nothing is loaded, even where the wheels happen to be installed.

When: the first `import llama_cpp` itself, wherever it happens (seven modules import it at their
top, in several packages; tests and benchmarks import it directly). `install_import_hook()`, called
when the `prefill` package is imported, puts a finder first on `sys.meta_path` that does nothing but
run `preload()` when llama_cpp is about to be found, then steps aside. Until then nothing is
loaded: the window's start-up does not pay for cuBLAS (0.7 s cold) before it shows.

Standard library only and no llama_cpp import: this runs before it.
"""

from __future__ import annotations

import ctypes
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

# Load order: cuBLAS needs cuBLASLt, and both need the runtime.
LIBRARIES = ("libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13")
_CUDA_BACKEND = ("libggml-cuda.so", "ggml-cuda.dll")

_loaded: tuple[Path, ...] | None = None


def llama_lib_folder() -> Path | None:
    """llama_cpp/lib, found without importing llama_cpp (whose import is what may fail)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "lib"


def is_cuda_build(lib_folder: Path | None = None) -> bool:
    """Whether the installed llama.cpp carries the CUDA backend."""
    folder = lib_folder if lib_folder is not None else llama_lib_folder()
    return folder is not None and any((folder / name).exists() for name in _CUDA_BACKEND)


def runtime_folder(search: list[str] | None = None) -> Path | None:
    """The first nvidia/cu13/lib on the import path (a frozen app's bundle folder included)."""
    roots = list(sys.path if search is None else search)
    bundle = getattr(sys, "_MEIPASS", None)
    if search is None and bundle:
        roots.insert(0, bundle)
    for root in roots:
        folder = Path(root or ".") / "nvidia" / "cu13" / "lib"
        if (folder / LIBRARIES[0]).exists():
            return folder
    return None


def preload(lib_folder: Path | None = None, search: list[str] | None = None) -> tuple[Path, ...]:
    """Load the CUDA runtime libraries when llama.cpp is a CUDA build and they are installed.

    Returns the files loaded (empty for a CPU build or where they are missing: llama_cpp then
    says itself which library it cannot open). Once per process; later calls return the same.
    """
    global _loaded
    if _loaded is not None:
        return _loaded
    loaded: list[Path] = []
    folder = runtime_folder(search) if sys.platform.startswith("linux") and is_cuda_build(lib_folder) else None
    if folder is not None:
        for name in LIBRARIES:
            path = folder / name
            if path.exists():
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                loaded.append(path)
    _loaded = tuple(loaded)
    return _loaded


class _PreloadBeforeLlamaCpp(importlib.abc.MetaPathFinder):
    """Runs preload() when llama_cpp is first looked for; finds nothing itself."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "llama_cpp":
            if self in sys.meta_path:  # once: preload's own find_spec must not come back here
                sys.meta_path.remove(self)
            preload()
        return None


def install_import_hook() -> None:
    """Have preload() run just before the first `import llama_cpp` (at once if it is imported already)."""
    if "llama_cpp" in sys.modules:
        preload()
    elif not any(isinstance(f, _PreloadBeforeLlamaCpp) for f in sys.meta_path):
        sys.meta_path.insert(0, _PreloadBeforeLlamaCpp())
