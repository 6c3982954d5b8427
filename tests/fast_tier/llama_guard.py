"""The fast tier's guard: llama.cpp's entry points refuse to start a backend or load a model.

Installed in the test process by `tests/tiers.py` when the run is the fast tier, and in every Python
child it starts through `sitecustomize.py` beside this file (the tier puts this folder on the
children's PYTHONPATH). Importing `llama_cpp` stays allowed (a module may import the engine to read
its types); calling `llama_backend_init` or loading a model file does not: the call raises, and the
process leaves a note in the folder `$PREFILL_FAST_TIER_TRIPS` names, so the test that caused it fails
even when the error is caught and worded somewhere on the way (a window's error box, a server's 500).

Self-contained (no import of `tests` or `prefill`): a child imports it as a top-level module.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

TIER_ENV = "PREFILL_FAST_TIER"  # "1": this process runs the fast tier (`make test-fast`)
TRIPS_ENV = "PREFILL_FAST_TIER_TRIPS"  # the folder where a process notes each refused load
# llama.cpp's calls that start it or load a model (a vocabulary-only load too); a projector or a
# context needs a loaded model first.
ENTRY_POINTS = ("llama_backend_init", "llama_model_load_from_file", "llama_load_model_from_file",
                "llama_model_load_from_splits")
_BINDINGS = "llama_cpp.llama_cpp"


class LlamaLoaded(RuntimeError):
    """A test of the fast tier started llama.cpp."""


def message(what: str) -> str:
    return (f"this test loads llama.cpp ({what}) but is in the fast tier: mark it "
            "@pytest.mark.model (or use a fixture tests/tiers.py lists in MODEL_FIXTURES)")


def note_trip(what: str) -> None:
    """Leave a note for the test process: this process tried to load llama.cpp."""
    folder = os.environ.get(TRIPS_ENV)
    if not folder:
        return
    name = f"{time.time_ns()}-{os.getpid()}.trip"
    try:
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(f"{what} in pid {os.getpid()}: {' '.join(getattr(sys, 'orig_argv', sys.argv))[:300]}\n")
    except OSError:
        pass


def _refusing(name: str, on_trip: Callable[[str], None]) -> Callable[..., Any]:
    def refuse(*_args: object, **_kw: object) -> Any:
        on_trip(name)
        raise LlamaLoaded(message(name))

    refuse.__name__ = name
    return refuse


def _patch(bindings: ModuleType, on_trip: Callable[[str], None]) -> None:
    for name in ENTRY_POINTS:
        if hasattr(bindings, name):
            setattr(bindings, name, _refusing(name, on_trip))
    package = sys.modules.get("llama_cpp")
    if package is not None:  # `from .llama_cpp import *` already copied the names: patch the copies too
        for name in ENTRY_POINTS:
            if hasattr(package, name):
                setattr(package, name, getattr(bindings, name))


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, on_trip: Callable[[str], None]) -> None:
        self.inner, self.on_trip = inner, on_trip

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        _patch(module, self.on_trip)  # before `llama_cpp/__init__.py` copies the names


class _Finder(importlib.abc.MetaPathFinder):
    """Finds llama-cpp-python's bindings as usual, and patches them once they have run."""

    def __init__(self, on_trip: Callable[[str], None]) -> None:
        self.on_trip = on_trip

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != _BINDINGS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Loader(spec.loader, self.on_trip)
        return spec


def install(on_trip: Callable[[str], None] = note_trip) -> None:
    """Refuse llama.cpp's start and model loads in this process from now on."""
    if _BINDINGS in sys.modules:
        _patch(sys.modules[_BINDINGS], on_trip)
    else:
        sys.meta_path.insert(0, _Finder(on_trip))
