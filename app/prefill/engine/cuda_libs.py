"""The CUDA runtime libraries a CUDA build of llama.cpp links, made findable before it loads.

A CUDA build made by scripts/llama_build.py links `libcudart.so.13` and `libcublas.so.13`, which
come from NVIDIA's wheels (nvidia-cuda-runtime, nvidia-cublas) in site-packages/nvidia/cu13/lib,
where the dynamic loader never looks. As PyTorch does for the same wheels, they are loaded here
by full path with RTLD_GLOBAL, so that the loader finds them already loaded (by soname) when
`import llama_cpp` opens libggml-cuda: no LD_LIBRARY_PATH, nothing outside the venv. A CPU build
has no libggml-cuda: nothing is loaded, even where the wheels happen to be installed.

Standard library only and no llama_cpp import: this runs before it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from pathlib import Path

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
