"""Waking the server's event loop from the scheduler thread without giving up the GIL.

`loop.call_soon_threadsafe` writes to the loop's self-pipe with `socket.send`, which
releases the GIL; the event loop, busy with the streams, takes it, and the scheduler
then waits for it to come back (up to a whole switch interval) before sampling the next
slot. Profiled under 4 streams, that wait was a quarter of the time spent in
`llama_decode`. Here the scheduler writes a byte to a pipe of our own with libc's
`write` called through `ctypes.PyDLL`, which keeps the GIL (a non-blocking write
of one byte returns at once), and the loop reads that pipe (`add_reader`).
Where that cannot be had (no `add_reader`, as on Windows' proactor loop, or no libc),
`call_soon_threadsafe` does it.

The byte is written only at the end of a scheduler step (`BatchScheduler.on_events`),
just before the next `llama_decode` drops the GIL: the loop's pass over the streams then
runs while llama.cpp decodes, instead of at a moment of the loop's own choosing, when the
decoder may come back from llama.cpp and find the GIL taken.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Protocol


class Wakeable(Protocol):
    def wake(self) -> None: ...


class Flushable(Protocol):
    def flush(self) -> None: ...


def _gil_holding_write() -> Callable[[int, bytes, int], int] | None:
    if os.name != "posix":
        return None
    try:
        fn = ctypes.PyDLL(None).write
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t], ctypes.c_ssize_t
    return fn


_write = _gil_holding_write()
WAKE_INTERVAL_S = 0.004


class LoopWaker:
    """Wakes the loop for every stream that has new events, once per scheduler step at most.

    During a step the scheduler hands each slot its events; every stream that got one is
    noted (`notify`), and at the step's end (`step_done`, on the scheduler thread) one
    wake-up, one pipe write, serves them all, so a step of N slots costs the loop one pass
    rather than N. Passes come at most every `interval_s`, except for an event a client is
    waiting on (`urgent`: the first token, the end) and when the scheduler falls idle: a
    model faster than that (a small one, a GPU) has its tokens sent a few at a time, so
    the loop's work, which holds the GIL the decoding thread needs back after every step,
    does not grow with the decode rate. A person cannot see 4 ms.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, interval_s: float = WAKE_INTERVAL_S):
        self.loop = loop
        self.interval_s = interval_s
        self._ready: deque[Wakeable] = deque()
        self._urgent = False  # an event that should not wait out the interval
        self._wake_pending = False  # written, not yet passed
        self._last_wake = 0.0  # perf_counter() of the last write
        self._direct: list[Flushable] = []  # streams the scheduler thread writes itself (direct_writes.py)
        self._direct_urgent = False
        self._last_flush = 0.0
        self._pipe = self._open_pipe()

    def _open_pipe(self) -> tuple[int, int] | None:
        if _write is None:
            return None
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        try:
            self.loop.add_reader(r, self._on_pipe)
        except (NotImplementedError, RuntimeError):
            os.close(r)
            os.close(w)
            return None
        weakref.finalize(self, _close_pipe, self.loop, r, w)
        return r, w

    def notify(self, stream: Wakeable, urgent: bool = False) -> None:  # on the scheduler thread
        """`stream` has new events: wake it at the end of this step (or a later one)."""
        self._ready.append(stream)
        self._urgent = self._urgent or urgent

    def notify_direct(self, stream: Flushable, urgent: bool = False) -> None:  # on the scheduler thread
        """`stream` has tokens the scheduler thread writes: at the end of this step (or a later one)."""
        self._direct.append(stream)
        self._direct_urgent = self._direct_urgent or urgent

    def mark_urgent(self) -> None:  # on the scheduler thread
        """A stream already waiting has an urgent event too."""
        self._urgent = True

    def step_done(self, idle: bool = False) -> None:  # on the scheduler thread
        """The end of a scheduler step (or the scheduler falls idle): one wake-up for what is ready,
        unless one is still on its way, or the interval has not passed and nothing is urgent. Streams the
        scheduler thread writes itself are written first, on the same terms."""
        if self._direct:
            now = time.perf_counter()
            if idle or self._direct_urgent or now - self._last_flush >= self.interval_s:
                self._direct_urgent = False
                self._last_flush = now
                streams, self._direct = self._direct, []
                for s in streams:
                    s.flush()
        if self._wake_pending or not self._ready:
            return
        now = time.perf_counter()
        if not (idle or self._urgent or now - self._last_wake >= self.interval_s):
            return
        self._urgent = False
        self._last_wake = now
        self._wake_pending = True
        if self._pipe is not None and _write is not None:
            _write(self._pipe[1], b"\0", 1)  # a full pipe (-1) already holds a wake-up
        else:
            try:
                self.loop.call_soon_threadsafe(self._pass)
            except RuntimeError:  # the loop has closed (the server stopped): nobody reads these streams
                pass

    def _on_pipe(self) -> None:  # on the loop
        assert self._pipe is not None
        try:  # one read: a wake-up is one byte, and none is written again before this pass (level-triggered:
            os.read(self._pipe[0], 4096)  # a byte left would call this again); a second read cost a syscall
        except BlockingIOError:  # and an exception per wake-up, a token's at one client
            pass
        self._pass()

    def _pass(self) -> None:  # on the loop; cleared first, so a later event asks for its own wake-up
        self._wake_pending = False
        ready = self._ready
        while ready:
            ready.popleft().wake()


def _close_pipe(loop: asyncio.AbstractEventLoop, r: int, w: int) -> None:
    if not loop.is_closed():
        loop.remove_reader(r)
    os.close(r)
    os.close(w)
