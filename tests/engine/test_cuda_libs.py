"""The CUDA runtime libraries are loaded before llama_cpp, for a CUDA build only, from a fake tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prefill.engine import cuda_libs


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda_libs, "_loaded", None)  # preload() runs once per process


def llama_lib(root: Path, cuda: bool) -> Path:
    lib = root / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    (lib / "libllama.so").write_bytes(b"")
    if cuda:
        (lib / "libggml-cuda.so").write_bytes(b"")
    return lib


def nvidia_wheels(site: Path) -> Path:
    """nvidia/cu13/lib as NVIDIA's wheels lay it out, each library a real shared object (a copy of
    one of Python's own: any file dlopen accepts will do)."""
    import _json

    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    for name in cuda_libs.LIBRARIES:
        shutil.copy(_json.__file__, lib / name)
    return lib


def test_a_cuda_build_gets_the_libraries_from_the_import_path(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    lib = nvidia_wheels(site)
    llama = llama_lib(site, cuda=True)
    assert cuda_libs.is_cuda_build(llama)
    assert cuda_libs.runtime_folder([str(tmp_path / "elsewhere"), str(site)]) == lib
    loaded = cuda_libs.preload(llama, [str(tmp_path / "elsewhere"), str(site)])
    assert loaded == tuple(lib / name for name in cuda_libs.LIBRARIES)
    maps = Path("/proc/self/maps").read_text()
    assert all(str(p) in maps for p in loaded)  # really loaded into this process
    assert cuda_libs.preload() == loaded  # once per process


def test_a_cpu_build_loads_nothing_even_beside_the_wheels(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    nvidia_wheels(site)
    llama = llama_lib(site, cuda=False)
    assert not cuda_libs.is_cuda_build(llama)
    assert cuda_libs.preload(llama, [str(site)]) == ()


def test_a_cuda_build_without_the_runtime_wheels_is_left_to_say_so_itself(tmp_path: Path) -> None:
    llama = llama_lib(tmp_path / "site-packages", cuda=True)
    assert cuda_libs.runtime_folder([str(tmp_path / "site-packages")]) is None
    assert cuda_libs.preload(llama, [str(tmp_path / "site-packages")]) == ()


def test_this_venv_llama_cpp_is_found_without_importing_it() -> None:
    folder = cuda_libs.llama_lib_folder()
    assert folder is not None and folder.name == "lib" and folder.parent.name == "llama_cpp"
