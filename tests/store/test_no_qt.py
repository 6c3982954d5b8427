"""store/ must run without Qt: no module in it imports PySide6 (or any Qt binding)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import prefill.store

STORE_DIR = Path(prefill.store.__file__).parent
QT_MODULES = ("PySide6", "PySide2", "PyQt5", "PyQt6", "shiboken6")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_store_module_imports_qt() -> None:
    files = sorted(STORE_DIR.glob("*.py"))
    assert len(files) >= 5
    offenders = {f.name: _imported(f) & set(QT_MODULES) for f in files}
    assert {name: bad for name, bad in offenders.items() if bad} == {}


def test_importing_the_store_loads_no_qt() -> None:
    code = (
        "import sys, prefill.store, prefill.store.history, prefill.store.settings_file;"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(STORE_DIR.parent.parent)},
        check=True,
    )
    assert result.stdout.strip() == "[]"
