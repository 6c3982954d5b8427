"""The layers: every import in app/prefill, module level or inside a function, points down.

    ui        -> hub, engine, store, remote (and the top-level helpers)
    commands  -> hub, engine, store, remote; the window command -> ui
    hub       -> engine
    remote    -> engine (an OpenAI-compatible endpoint in place of a local model)
    store     -> the engine's leaf modules only (settings, setting_fields, errors, message, units)
    engine    -> nothing above it

Only ui (and the window command, which starts it) imports Qt, and no two modules import each
other, at any depth (ARCHITECTURE.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app" / "prefill"
QT = ("PySide6", "PySide2", "PyQt5", "PyQt6", "shiboken6")
TOP = {"prefill", "prefill.resources", "prefill.__main__"}
SCHEMA = {"prefill.engine.settings", "prefill.engine.setting_fields", "prefill.engine.errors", "prefill.engine.message",
          "prefill.engine.units"}


def module_name(path: Path) -> str:
    rel = path.relative_to(APP.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES}
    return names


MODULES = {module_name(p): p for p in APP.rglob("*.py")}


LAYERS = ("engine", "hub", "store", "remote", "ui", "commands", "bench")


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "top"


ALLOWED = {
    "engine": {"engine"},
    "store": {"store"},
    "hub": {"hub", "engine"},
    "bench": {"bench", "engine"},
    "remote": {"remote", "engine"},
    "ui": {"ui", "hub", "engine", "store", "remote", "top"},
    "commands": {"commands", "hub", "engine", "store", "bench", "remote", "top"},
    "top": {"top", "commands", "engine"},
}


def test_every_import_points_down() -> None:
    wrong = []
    for name, path in MODULES.items():
        own = layer(name)
        for target in imports(path):
            if not target.startswith("prefill"):
                continue
            if own == "store" and target in SCHEMA:
                continue
            if name == "prefill.commands.window" and target.startswith("prefill.ui"):
                continue
            if layer(target) not in ALLOWED[own]:
                wrong.append(f"{name} -> {target}")
    assert wrong == []


def test_only_the_ui_imports_qt() -> None:
    wrong = [f"{name} -> {t}" for name, path in MODULES.items() if layer(name) != "ui"
             for t in imports(path) if t.split(".")[0] in QT]
    assert wrong == []


def test_no_import_cycles() -> None:
    graph = {name: {t for t in imports(path) if t in MODULES and t != name} for name, path in MODULES.items()}
    # A package's __init__ re-exporting its modules is not a cycle of the code: leave those edges out.
    for name in graph:
        graph[name] = {t for t in graph[name] if not (MODULES[t].name == "__init__.py" and name.startswith(t + "."))}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []
