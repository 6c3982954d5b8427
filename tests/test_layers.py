"""The import contract: every import in app/prefill, module level or inside a function, points down.

The contract is declared once, in pyproject.toml's [tool.prefill.layers], read here and quoted in
ARCHITECTURE.md (a test keeps the quote true). Only the ui rooms import Qt, and no two modules
import each other at any depth, a type hint's import (under `if TYPE_CHECKING:`) included.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app" / "prefill"
QT = ("PySide6", "PySide2", "PyQt5", "PyQt6", "shiboken6")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
CONTRACT: dict[str, list[str]] = PYPROJECT["tool"]["prefill"]["layers"]


def module_name(path: Path) -> str:
    rel = path.relative_to(APP.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


MODULES = {module_name(p): p for p in APP.rglob("*.py")}


def _type_only(tree: ast.AST) -> set[int]:
    """The ids of the import nodes under `if TYPE_CHECKING:` (read by type checkers, never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Import | ast.ImportFrom)}
    return out


def imports(path: Path, run_time_only: bool = False) -> set[str]:
    """The modules `path` imports; `run_time_only`: leaving out those imported for type hints only."""
    names: set[str] = set()
    tree = ast.parse(path.read_text("utf-8"))
    skip = _type_only(tree) if run_time_only else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES}
    return names


def unit(module: str) -> str | None:
    """The longest contract unit `module` (prefill.…) belongs to; None for the package root."""
    name = module.removeprefix("prefill.")
    best = None
    for key in CONTRACT:
        if (name == key or name.startswith(key + ".")) and (best is None or len(key) > len(best)):
            best = key
    return best


def allowed(own: str) -> set[str]:
    out = {own}
    for entry in CONTRACT[own]:
        if entry.endswith(".*"):
            base = entry[:-2]
            out |= {k for k in CONTRACT if k == base or k.startswith(base + ".")}
        else:
            out.add(entry)
    return out


def test_every_module_has_a_unit() -> None:
    assert [m for m in MODULES if m != "prefill" and unit(m) is None] == []
    assert all(e.removesuffix(".*") in CONTRACT for deps in CONTRACT.values() for e in deps)


def test_every_import_points_down() -> None:
    wrong = []
    for name, path in MODULES.items():
        own = unit(name)
        if own is None:
            continue
        ok = allowed(own)
        for target in imports(path):
            if not target.startswith("prefill.") or target not in MODULES:
                continue
            t = unit(target)
            if t is not None and t not in ok:
                wrong.append(f"{name} ({own}) -> {target} ({t})")
    assert wrong == []


def test_local_and_batch_never_import_each_other() -> None:
    for a, b in (("engine.local", "engine.batch"), ("engine.batch", "engine.local")):
        assert b not in allowed(a)


def test_only_the_ui_imports_qt() -> None:
    wrong = [f"{name} -> {t}" for name, path in MODULES.items() if not (unit(name) or "").startswith("ui")
             for t in imports(path) if t.split(".")[0] in QT]
    assert wrong == []


def test_the_architecture_quotes_the_contract() -> None:
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    block = text[text.index("[tool.prefill.layers]"):].split("\n\n")[0].strip()
    assert block in (ROOT / "ARCHITECTURE.md").read_text("utf-8")


# Cycles allowed for now (none left): a cycle fixed leaves this list, so it only shrinks.
KNOWN_CYCLES: list[list[str]] = []


def import_graph(run_time_only: bool = False) -> dict[str, set[str]]:
    graph = {name: {t for t in imports(path, run_time_only) if t in MODULES and t != name}
             for name, path in MODULES.items()}
    # A package's __init__ re-exporting its modules is not a cycle of the code: leave those edges out.
    for name in graph:
        graph[name] = {t for t in graph[name] if not (MODULES[t].name == "__init__.py" and name.startswith(t + "."))}
    return graph


def cycles_in(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle found by a depth-first walk, written from its first module in sorted order."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                loop = stack[stack.index(nxt):]
                first = loop.index(min(loop))
                loop = loop[first:] + loop[:first]
                cycles.append([*loop, loop[0]])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_the_cycle_check_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles_in(graph) == [["a", "b", "c", "a"]]


def test_no_import_cycles() -> None:
    # Type-level imports (under `if TYPE_CHECKING:`) count too: a helper that names the window calling
    # it in a hint is tied to that window as much as one that imports it; it takes a narrow Protocol instead.
    assert [c for c in cycles_in(import_graph()) if c not in KNOWN_CYCLES] == []
    assert cycles_in(import_graph(run_time_only=True)) == []


def test_the_known_cycles_are_still_there() -> None:
    """A cycle fixed must leave KNOWN_CYCLES, so the list only shrinks."""
    found = cycles_in(import_graph())
    assert [c for c in KNOWN_CYCLES if c not in found] == []
