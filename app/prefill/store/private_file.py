"""Writing a file only its owner can read, atomically: the settings and the saved endpoints hold keys."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from prefill.engine.private_paths import private_folder


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and os.replace; the file gets mode 0600.

    Raises:
        OSError: The folder or file cannot be written (the temporary file is removed).
    """
    private_folder(path.parent)
    # mkstemp creates the file with mode 0600.
    fd, temp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except OSError:
        Path(temp_name).unlink(missing_ok=True)
        raise
