"""Folders and files only their owner can open: conversations, their KV state and keys are private.

New folders are made mode 0700 and new files 0600, whatever the umask; existing ones lose what
others may do with them (their owner's own bits are left as they are).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(path: Path) -> Path:
    """Make `path` (and missing parents) and leave it readable by its owner alone."""
    path.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    _narrow(path, FOLDER_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty if missing, mode 0600; an existing one is narrowed to 0600."""
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE))
    _narrow(path, FILE_MODE)
    return path


def open_private(path: Path) -> int:
    """A new file (or one truncated) opened for writing, mode 0600: its descriptor."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, FILE_MODE)
    _narrow(path, FILE_MODE)
    return fd


def _narrow(path: Path, allowed: int) -> None:
    with contextlib.suppress(OSError):  # one we do not own stays as it is
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & ~allowed:
            os.chmod(path, mode & allowed)


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and os.replace; the file gets mode 0600 (what
    holds keys: the settings, the saved endpoints, mcp.json).

    Raises:
        OSError: The folder or file cannot be written (the temporary file is removed).
    """
    private_folder(path.parent)
    # mkstemp creates the file with mode 0600; os.replace puts it where a wider one may have been.
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
