"""PYTHONPATH entry for children that load models with llama-cpp-python as Prefill does."""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child_env(**extra: str) -> dict[str, str]:
    """The environment for such a child: this folder first on PYTHONPATH (its sitecustomize runs)."""
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
