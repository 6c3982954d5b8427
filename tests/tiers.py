"""Two tiers of tests: those that load llama.cpp (marked `model`) and the fast rest.

`make test` runs both; `make test-fast` runs `pytest -m "not model"`. A test is marked `model` here,
at collection, when it (or a fixture it uses, or a function of its own module it calls, followed
through that module) loads llama.cpp as far as can be read from the code:

- it uses a fixture named in MODEL_FIXTURES (at any depth: `fresh_engine` needs `engine`);
- its code or a fixture's names one of LOADERS (`ChatEngine.load`, `load_batch_model`, a `prefill`
  command line with `--model`…);
- or it says so itself: `@pytest.mark.model`, or `pytestmark = pytest.mark.model` in its module.

What reading misses the fast tier catches when it runs: there llama.cpp's entry points refuse to start
a backend or load a model, in the test process and in every Python child it starts
(`tests/fast_tier/llama_guard.py`), and the test that tried fails, saying to mark it. `pytest
--collect-only -q --tier-reasons` prints why each test is in the model tier.
"""

from __future__ import annotations

import ast
import os
import subprocess
import tempfile
from collections.abc import Generator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.fast_tier import llama_guard

TESTS = Path(__file__).resolve().parent
GUARD_DIR = TESTS / "fast_tier"

# Fixtures that load a model, or hand one over (a model file is there to be loaded), or a process or
# window that loads one. A fixture built on one of these is model-tier too.
MODEL_FIXTURES = frozenset({
    "smollm2", "tiny_model", "engine", "fresh_engine", "llama_cpp", "prefill_server", "caller_server", "server",
    "app", "tiny_vision", "vision_engine", "seeing",
})
# Names that load llama.cpp when called: bare, or as "Owner.attribute".
LOADERS = frozenset({
    "ChatEngine.load", "load_batch_model", "LlamaRuntime", "BatchRuntime", "Llama", "RunningServer",
    "open_backend", "LocalModel", "load_model", "start_server", "start_llama_cpp_server", "Vocab",
    "bundled_model_path", "EmbeddingModel",
})
# Imported helpers, by the module that defines them, whose short names are too common to list above.
LOADER_PATHS = frozenset({"tests.ui.conftest.load"})
# A string that, in a command line a test runs, loads a model file.
MODEL_ARGS = frozenset({"--model"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--tier-reasons", action="store_true",
                     help="with --collect-only: print why each test is in the model tier")


def fast_tier(config: pytest.Config) -> bool:
    """Whether this run is the fast tier: `make test-fast`, or `-m "not model"` asked by hand."""
    markexpr = "".join(str(config.getoption("markexpr", "") or "").split())
    return os.environ.get(llama_guard.TIER_ENV) == "1" or markexpr == "notmodel"


def pytest_configure(config: pytest.Config) -> None:
    if not fast_tier(config):
        return
    os.environ[llama_guard.TIER_ENV] = "1"
    os.environ[llama_guard.TRIPS_ENV] = tempfile.mkdtemp(prefix="prefill-fast-tier-")
    # Every Python child runs tests/fast_tier/sitecustomize.py, which installs the same guard.
    os.environ["PYTHONPATH"] = _guarded_path(os.environ.get("PYTHONPATH", ""))
    llama_guard.install()
    _guard_children()


def _guarded_path(pythonpath: str) -> str:
    return os.pathsep.join(p for p in (str(GUARD_DIR), pythonpath) if p)


def _guard_children() -> None:
    """A test that gives a child an environment of its own (PYTHONPATH=app, say) keeps the guard in it."""
    init = subprocess.Popen.__init__

    def guarded_init(self: subprocess.Popen[Any], *args: Any, **kw: Any) -> None:
        env = kw.get("env")
        if env is not None and str(GUARD_DIR) not in str(env.get("PYTHONPATH", "")).split(os.pathsep):
            kw["env"] = {**env, "PYTHONPATH": _guarded_path(str(env.get("PYTHONPATH", ""))),
                         llama_guard.TIER_ENV: "1", llama_guard.TRIPS_ENV: os.environ[llama_guard.TRIPS_ENV]}
        init(self, *args, **kw)

    subprocess.Popen.__init__ = guarded_init  # type: ignore[method-assign]


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("model") is not None:
            reason = "marked model"
        else:
            reason = model_reason(item)
            if reason:
                item.add_marker(pytest.mark.model)
        if reason and config.getoption("tier_reasons"):
            print(f"{item.nodeid}: {reason}")


_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                               ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """In the fast tier: fail the test during which anything (this process or a child, the test or
    its fixtures) tried to load llama.cpp, whether or not the error reached the test."""
    yield
    folder = os.environ.get(llama_guard.TRIPS_ENV)
    trips = sorted(Path(folder).glob("*.trip")) if folder and fast_tier(item.config) else []
    if trips:
        lines = [t.read_text(encoding="utf-8").strip() for t in trips]
        for t in trips:
            t.unlink()
        if not item.stash.get(_FAILED, False):  # else the refusal failed it already
            pytest.fail(llama_guard.message("; ".join(dict.fromkeys(lines))), pytrace=False)


def model_reason(item: pytest.Item) -> str:
    """Why `item` loads llama.cpp, as far as its code says ("" where it does not)."""
    used = MODEL_FIXTURES.intersection(getattr(item, "fixturenames", ()))
    if used:
        return f"uses the fixture {sorted(used)[0]}"
    path = getattr(item, "path", None)
    name = getattr(item, "originalname", "")
    if path is None or not name:
        return ""
    cls = getattr(item, "cls", None)
    why = _reads_as_loading(Path(path), f"{cls.__name__}.{name}" if cls is not None else name)
    if why:
        return why
    infos = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for fixture in getattr(item, "fixturenames", ()):
        for fixturedef in infos.get(fixture, ())[-1:]:
            code = getattr(getattr(fixturedef, "func", None), "__code__", None)
            if code is None or not Path(code.co_filename).resolve().is_relative_to(TESTS):
                continue
            why = _reads_as_loading(Path(code.co_filename).resolve(), code.co_name)
            if why:
                return f"its fixture {fixture}: {why}"
    return ""


class _Module:
    """One test module's top-level functions and classes, what each names, and where its imports come from."""

    def __init__(self, path: Path) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        self.defs: dict[str, ast.AST] = {}
        self.fixtures: set[str] = set()  # a test has these by its arguments, never by calling them
        self.origin: dict[str, str] = {}  # a name imported from a module: "module.name"
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.defs[node.name] = node
                if any("fixture" in ast.unparse(d) for d in node.decorator_list):
                    self.fixtures.add(node.name)
            elif isinstance(node, ast.ClassDef):
                self.defs[node.name] = node
                for sub in node.body:
                    if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                        self.defs[f"{node.name}.{sub.name}"] = sub
            elif isinstance(node, ast.Assign | ast.AnnAssign):  # a constant's value: FAST = ["--model", …]
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.defs[target.id] = node
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.origin[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def reads_as_loading(self, start: str) -> str:
        """Why the function `start` loads llama.cpp, following the module's own functions it names."""
        seen: set[str] = set()
        todo = [start]
        while todo:
            name = todo.pop()
            node = self.defs.get(name)
            if node is None or name in seen:
                continue
            seen.add(name)
            local = _bound_in(node)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name):
                    if sub.id in LOADERS or self.origin.get(sub.id) in LOADER_PATHS:
                        return f"{name} calls {sub.id}"
                    if sub.id in local or sub.id in self.fixtures:
                        continue
                    helper = self.origin.get(sub.id, "")
                    if helper.startswith("tests."):  # a helper of another test module: read it there
                        module, _, function = helper.rpartition(".")
                        why = _reads_as_loading(TESTS.parent / f"{module.replace('.', '/')}.py", function)
                        if why:
                            return f"{name} calls {sub.id}: {why}"
                    else:
                        todo.append(sub.id)
                elif isinstance(sub, ast.Attribute):
                    owner = sub.value.id if isinstance(sub.value, ast.Name) else ""
                    if sub.attr in LOADERS or f"{owner}.{sub.attr}" in LOADERS:
                        return f"{name} calls {owner}.{sub.attr}" if owner else f"{name} calls .{sub.attr}"
                elif isinstance(sub, ast.Constant) and sub.value in MODEL_ARGS:
                    return f"{name} runs a command with {sub.value}"
        return ""


def _bound_in(node: ast.AST) -> set[str]:
    """The names a function binds itself (its arguments, what it assigns): never a module's function."""
    bound = {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
    bound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return bound


@cache
def _module(path: Path) -> _Module | None:
    try:
        return _Module(path)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


_reading: set[tuple[Path, str]] = set()  # what is being read now: two modules' helpers may name each other


@cache
def _reads_as_loading(path: Path, name: str) -> str:
    module = _module(path)
    if module is None or (path, name) in _reading:
        return ""
    _reading.add((path, name))
    try:
        return module.reads_as_loading(name)
    finally:
        _reading.discard((path, name))
