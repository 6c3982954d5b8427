"""An exclusive lock on a file, across threads and processes (the window and `prefill get`).

The operating system holds the lock (`flock` on POSIX, `LockFileEx` through
`msvcrt.locking` on Windows), so a process that dies, even by SIGKILL or a power
cut, lets go of it: no lock is ever stale, and none needs a timeout. The holder
writes its process id into the file, so the one turned away can say who holds it.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Self

_BUSY = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES, errno.EDEADLK)
_WIN_LOCK_AT = 1 << 20  # Windows locks a byte range: one byte past the pid, so the pid stays readable


class FileLock:
    """A non-blocking exclusive lock held through the file at `path`.

    Two `FileLock`s on one path exclude each other even in one process (each opens
    the file itself). Use `acquire()`/`release()`, or `with` when it must succeed.

    Args:
        path: the lock file (created when missing; removed on release on POSIX).
    """

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """Take the lock if nobody holds it; False when someone does."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already held by this FileLock")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                locked = _try_lock(fd)
            except BaseException:
                os.close(fd)
                raise
            if not locked:
                os.close(fd)
                return False
            if _still_linked(self.path, fd):
                break
            os.close(fd)  # its holder removed the file between our open and our lock: again
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        """Let go (removing the file first, so a waiter never locks a file nobody can see)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if sys.platform != "win32":  # Windows cannot remove an open file; an empty one stays
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
        _unlock(fd)
        os.close(fd)

    def holder(self) -> int | None:
        """The process id the holder wrote, None when unknown (it may not have written it yet)."""
        try:
            text = self.path.read_text(errors="replace").strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def __enter__(self) -> Self:
        if not self.acquire():
            raise BlockingIOError(errno.EWOULDBLOCK, "the file is locked", str(self.path))
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def _still_linked(path: Path, fd: int) -> bool:
    if sys.platform == "win32":
        return True  # never removed there
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, _WIN_LOCK_AT, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as e:
            if e.errno in _BUSY:
                return False
            raise
        finally:
            os.lseek(fd, 0, os.SEEK_SET)
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WIN_LOCK_AT, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # per open file: two opens exclude
        except OSError as e:
            if e.errno in _BUSY:
                return False
            raise
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
