"""A streamed answer's tokens written by the scheduler thread, between two decodes.

At one client on a CPU, llama.cpp decodes on every core and the event loop, woken for each token, takes
one of them from it: SmolLM2 on two cores spent ~0.4 ms of the loop's CPU per streamed token (a wake-up,
a task's step through the reply's generators, the socket's write), and the decode waited about as long.
llama.cpp's own server formats a token's chunk in C++ and writes it in a few tens of microseconds.

So while a stream is quiet on the loop's side (its earlier chunks all in the socket, nothing it has
not taken), the loop hands it over (`arm`): the scheduler thread, at the end of its step, just before the
next decode (`LoopWaker.step_done`), renders the tokens that came with the dialect's own writer (the same
object the loop uses, never by both at once: `lock`) and writes the chunk to the connection's socket with
libc's `send`, which keeps the GIL (a non-blocking socket: it returns at once; Python's own would give the
GIL to the loop and wait up to a switch interval to have it back). It hands the stream back to the loop
(`on` false, the loop woken) for everything else: the answer's end (a dialect's last chunk may wait on the
disk or the clock), a socket that took only part of a chunk (the rest goes first, through the transport,
which then paces a slow client), a socket the client closed. The loop arms it again when it next waits
with nothing left to write.

The socket is a duplicate of the transport's (`os.dup`), closed by the loop once the response has ended:
a number the loop closed and the kernel gave to another connection is never written to.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import socket
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from prefill.server.chunk_writer import frame, writes_chunks

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import RequestResponseCycle

    from prefill.engine.batch.request import BatchEvent

log = logging.getLogger(__name__)
NO_SIGNAL = getattr(socket, "MSG_NOSIGNAL", 0)  # a closed peer is EPIPE, not a signal (Python ignores it anyway)
_GONE = {errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN, errno.ESHUTDOWN}


def _gil_holding_send() -> Callable[[int, bytes, int, int], int] | None:
    if os.name != "posix":
        return None
    try:
        fn = ctypes.PyDLL(None, use_errno=True).send
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_ssize_t
    return fn


_send = _gil_holding_send()


class DirectWrites:
    """One stream's token chunks, written by the scheduler thread while the loop lets it (see the module).

    `pending` is the stream's own queue of events: the scheduler thread appends to it and, while `on`,
    takes from it too; the loop takes from it only while not. `render` turns a batch of token events into
    the dialect's text (the events read by the reply's `Generation`, written by its step writer)."""

    def __init__(self, cycle: RequestResponseCycle, pending: deque[BatchEvent],
                 render: Callable[[list[BatchEvent]], str]):
        self.cycle = cycle
        self.pending = pending
        self.render = render
        self.lock = threading.Lock()
        self.on = False  # the scheduler thread writes this stream's tokens
        self.left = b""  # what the socket did not take of a chunk: the loop writes it first
        self._fd = -1

    @staticmethod
    def possible(cycle: RequestResponseCycle | None = None) -> bool:
        """Whether the scheduler thread can write (libc's `send` is there), to `cycle`'s connection where one
        is named (a plain socket: TLS's bytes are the transport's to write)."""
        return _send is not None and (cycle is None or cycle.transport.get_extra_info("sslcontext") is None)

    def take(self, event: BatchEvent, is_token: bool) -> bool:  # on the scheduler thread
        """Queue `event`: True when the scheduler thread writes it (a token while `on`); else the loop
        writes it, and an end hands the stream back first."""
        with self.lock:
            self.pending.append(event)
            if self.on and is_token:
                return True
            self.on = False
            return False

    def flush(self) -> bool:  # on the scheduler thread, at a step's end
        """Write what came since the last flush; False when the stream went back to the loop."""
        with self.lock:
            if not self.on:
                return True  # the loop has it, and was woken when it took it back
            if not self.pending:
                return True
            events = list(self.pending)
            self.pending.clear()
            try:
                text = self.render(events)
            except Exception:  # the loop's own path would have failed the same way: the stream goes on there
                log.exception("a stream's chunk could not be written")
                self.on = False
                return False
            if not text:
                return True
            data = frame(text.encode())
            assert _send is not None
            n = _send(self._fd, data, len(data), NO_SIGNAL)
            if n == len(data):
                return True
            if n < 0:
                n = 0
                if ctypes.get_errno() in _GONE:  # the loop hears of it from the connection
                    data = b""  # anything else (a full socket) leaves the chunk to the loop's transport
            self.left = data[n:]
            self.on = False
            return False

    def arm(self) -> None:  # on the loop, with nothing of this stream's left to take
        """Hand the stream to the scheduler thread, when the connection has written all it was given."""
        with self.lock:
            if self.on or self.pending or self.left or not self._quiet():
                return
            if self._fd < 0:
                sock = self.cycle.transport.get_extra_info("socket")
                try:
                    self._fd = os.dup(sock.fileno()) if sock is not None else -1
                except OSError:  # closed under it: the loop keeps the stream
                    return
                if self._fd < 0:
                    return
            self.on = True

    def _quiet(self) -> bool:
        """Everything given to the transport is in the socket."""
        transport = self.cycle.transport
        return writes_chunks(self.cycle) and not transport.is_closing() and transport.get_write_buffer_size() == 0

    def collect(self) -> list[BatchEvent]:  # on the loop
        """The events the loop is to write (none while the scheduler thread has the stream), after what
        a socket left of the scheduler thread's last chunk."""
        with self.lock:
            if self.on:
                return []
            if self.left:
                if not self.cycle.transport.is_closing():
                    self.cycle.transport.write(self.left)
                self.left = b""
            events = list(self.pending)
            self.pending.clear()
            return events

    def close(self) -> None:  # on the loop, once the response has ended
        with self.lock:
            self.on = False
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
