"""The hub core imports nothing from Qt (STYLE.md, convention 1)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

HUB = Path(__file__).resolve().parents[2] / "app" / "prefill" / "hub"
QT = ("PySide6", "PyQt5", "PyQt6", "shiboken6")


def test_no_qt_import_in_source() -> None:
    for path in HUB.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] in QT for n in names), f"{path.name} imports {names}"


def test_importing_every_hub_module_loads_no_qt() -> None:
    modules = [f"prefill.hub.{p.stem}" for p in HUB.glob("*.py") if p.stem != "__init__"]
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    code += f"bad = [m for m in sys.modules if m.split('.')[0] in {QT!r}]\nassert not bad, bad\n"
    env_path = str(HUB.parents[1])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, timeout=60)
    assert out.returncode == 0, out.stderr
