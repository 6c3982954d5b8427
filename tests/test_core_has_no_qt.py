"""The core (engine/, hub/, store/) imports nothing from Qt: it runs in the CLI, tests and servers.
And resources/ is found from a checkout.

STYLE.md, convention 1. Checked twice: no import statement names a Qt binding, and importing
every core module in a fresh interpreter loads none.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"
CORE = ("engine", "hub", "store", "server")
QT = ("PySide6", "PySide2", "PyQt5", "PyQt6", "shiboken6")


def _files(package: str) -> list[Path]:
    return sorted((APP / "prefill" / package).glob("*.py"))


@pytest.mark.parametrize("package", CORE)
def test_no_core_module_names_qt(package: str) -> None:
    files = _files(package)
    assert len(files) >= 4
    for path in files:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] in QT for n in names), f"{path} imports {names}"


def test_importing_the_whole_core_loads_no_qt() -> None:
    modules = [f"prefill.{pkg}.{p.stem}" for pkg in CORE for p in _files(pkg) if p.stem != "__init__"]
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    code += f"print(sorted(m for m in sys.modules if m.split('.')[0] in {QT!r}))\n"
    env = dict(os.environ, PYTHONPATH=str(APP))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_resources_are_found_from_a_checkout() -> None:
    from prefill.resources import icon_path, resources_dir

    assert resources_dir() == APP.parent / "resources"
    assert icon_path() is not None and icon_path().is_file()
