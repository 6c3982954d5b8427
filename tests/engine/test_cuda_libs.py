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


def test_the_import_hook_preloads_once_just_before_llama_cpp_is_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whichever module imports llama_cpp first (a bench module does, before any engine module),
    the libraries are loaded before it; and not before: importing prefill loads nothing."""
    import importlib.util
    import sys

    calls: list[str] = []
    monkeypatch.setattr(cuda_libs, "preload", lambda *a, **k: calls.append("preload") or ())
    hook = cuda_libs._PreloadBeforeLlamaCpp
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if not isinstance(f, hook)])
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    cuda_libs.install_import_hook()
    cuda_libs.install_import_hook()  # twice: one finder
    assert sum(isinstance(f, hook) for f in sys.meta_path) == 1 and calls == []
    assert importlib.util.find_spec("json") is not None and calls == []  # other imports: untouched
    assert importlib.util.find_spec("llama_cpp") is not None  # the real finders still find it
    assert calls == ["preload"]
    assert not any(isinstance(f, hook) for f in sys.meta_path)  # stepped aside
    importlib.util.find_spec("llama_cpp")
    assert calls == ["preload"]


def test_prefill_itself_installs_the_hook() -> None:
    import subprocess
    import sys

    probe = ("import sys, prefill\n"
             "from prefill.engine import cuda_libs\n"
             "hooked = any(isinstance(f, cuda_libs._PreloadBeforeLlamaCpp) for f in sys.meta_path)\n"
             "print(hooked, 'llama_cpp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
