"""Which model load has not finished: a model that hangs or crashes the app while it loads (or
while its template runs) is not reopened by itself at the next start.

The marker is written before a load starts and removed when it ends, either way. One found at
start-up names a load that never ended.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


class LoadMarker:
    """A small file beside the settings; every fault reading it means "no marker"."""

    def __init__(self, path: Path):
        self.path = path

    def begin(self, model_path: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"model": model_path, "pid": os.getpid()}), encoding="utf-8")
        os.replace(tmp, self.path)

    def end(self) -> None:
        self.path.unlink(missing_ok=True)

    def unfinished(self) -> str | None:
        """The model whose last load never ended, if any."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        model = data.get("model") if isinstance(data, dict) else None
        return model if isinstance(model, str) and model else None
