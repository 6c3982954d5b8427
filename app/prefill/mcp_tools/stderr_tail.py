"""The last lines a server process wrote to stderr, kept to quote when it fails to start or dies.

The process writes into a pipe; one daemon thread reads it until every writer has closed it and
keeps only the last `keep_bytes`, so a chatty server can run for days without growing anything.
"""

from __future__ import annotations

import os
import threading
from typing import TextIO

KEEP_BYTES = 8 * 1024
_READ_CHUNK = 64 * 1024


class StderrTail:
    """A pipe for a server's stderr and the tail of what came through it.

    Pass `writer` as the process's stderr, then `release_writer()` once it has started (or failed
    to), so the pipe ends when the process (and any child it left) does.
    """

    def __init__(self, name: str, keep_bytes: int = KEEP_BYTES):
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._read_fd = read_fd
        self._keep = keep_bytes
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name=f"mcp-stderr-{name}", daemon=True)
        self._thread.start()

    def release_writer(self) -> None:
        """Close this process's copy of the write end (the child has its own)."""
        if not self.writer.closed:
            self.writer.close()

    def wait_drained(self, timeout_s: float) -> None:
        """Wait (up to `timeout_s`) until the pipe has ended and all of it is read: call it once the
        process has ended, so its last words are in `tail()`."""
        self._thread.join(timeout_s)

    def tail(self, max_lines: int = 4, max_chars: int = 600) -> str:
        """The last non-blank lines written, joined by " / ", at most `max_chars` ("" when none)."""
        with self._lock:
            data = bytes(self._buf)
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
        text = " / ".join(lines[-max_lines:])
        return text if len(text) <= max_chars else "…" + text[-(max_chars - 1) :]

    def _read(self) -> None:
        try:
            while chunk := os.read(self._read_fd, _READ_CHUNK):
                with self._lock:
                    self._buf += chunk
                    if len(self._buf) > self._keep:
                        del self._buf[: -self._keep]
        except OSError:
            pass
        finally:
            os.close(self._read_fd)
