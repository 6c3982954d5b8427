"""Prints facts from the root pyproject.toml for the packaging scripts (Python 3.11+).

python packaging/tools/project_info.py version       -> 0.1.0
python packaging/tools/project_info.py dependencies  -> a requirement a line, no llama-cpp-python
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
# Installed from a wheel built for the installer (packaging/build_llama_wheel.sh), never from PyPI.
BUILT_HERE = "llama-cpp-python"


def _project() -> dict:
    with PYPROJECT.open("rb") as f:
        return tomllib.load(f)["project"]


def dependencies() -> list[str]:
    return [
        d
        for d in _project()["dependencies"]
        if not d.replace("_", "-").lower().startswith(BUILT_HERE)
    ]


def main(argv: list[str]) -> int:
    if argv == ["version"]:
        print(_project()["version"])
    elif argv == ["dependencies"]:
        print("\n".join(dependencies()))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
