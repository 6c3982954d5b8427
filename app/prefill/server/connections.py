"""Connections that hold: a deadline for a request's headers, a cap on open connections, and a
way for a response to close its own connection.

uvicorn times out a kept-alive connection between requests, but not one that never finishes
its headers, and accepts connections until the process runs out of file descriptors (a
desktop's limit is often 1,024). So, on top of uvicorn's h11 protocol:

- a connection that has not sent a whole request's headers within `header_deadline_s` of
  opening (or of its last response) is closed, as is one whose client stopped taking its response;
- little is buffered for a client (SEND_BUFFER_BYTES), so one that stops reading a stream blocks its
  writes soon, and generate.EventSourceResponse drops it;
- past `max_connections`, the connection that has waited longest for its headers is closed to
  make room for the new one; when every connection is serving a request, the new one gets a
  503 with `Retry-After` instead;
- the ASGI scope carries `prefill.close_connection`, which a response calls to drop a client
  that stopped reading (generate.EventSourceResponse); the call returns once it is closed.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)
HEADER_DEADLINE_S = 10.0
MAX_CONNECTIONS = 512
# What may wait, unsent, for one client: in the socket and in the transport. Small, so that a client
# that stops reading blocks the response's writes (and is dropped) within a few hundred tokens.
SEND_BUFFER_BYTES = 32 * 1024
SPARE_FILES = 64  # descriptors kept for the model, the database, logs
CLOSE_KEY = "prefill.close_connection"
_FULL_BODY = b'{"error": {"message": "The server has too many connections.", "type": "server_error", "code": null}}'
_FULL = (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Type: application/json\r\n"
         b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_FULL_BODY), _FULL_BODY))


def connection_cap(wanted: int = MAX_CONNECTIONS) -> int:
    """`wanted`, lowered to what the process's file-descriptor limit leaves room for."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(8, min(wanted, soft - SPARE_FILES))


def guarded_protocol(header_deadline_s: float = HEADER_DEADLINE_S,
                     max_connections: int = MAX_CONNECTIONS) -> type[H11Protocol]:
    """uvicorn's h11 protocol with these bounds (uvicorn.Config(http=…) takes the class)."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {
        "header_deadline_s": header_deadline_s, "max_connections": connection_cap(max_connections)})


class GuardedH11Protocol(H11Protocol):
    header_deadline_s = HEADER_DEADLINE_S
    max_connections = MAX_CONNECTIONS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._served = 0  # responses completed on this connection
        self._waiting_since: float | None = time.monotonic()  # for its headers; None while it serves
        self._lost = asyncio.Event()
        self._deadline: asyncio.TimerHandle | None = None
        if len(self.connections) > self.max_connections and not self._make_room():
            transport.write(_FULL)
            transport.close()
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        transport.set_write_buffer_limits(high=SEND_BUFFER_BYTES)
        self._unsent = 0  # at the last deadline: a client still taking its last response is let be
        self._arm()
        inner, close = self.app, self._close_and_wait

        async def app(scope: Any, receive: Any, send: Any) -> None:
            self._waiting_since = None  # its headers came
            scope.setdefault("extensions", {})[CLOSE_KEY] = close
            await inner(scope, receive, send)

        self.app = app

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._deadline is not None:
            self._deadline.cancel()
        self._lost.set()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._served += 1
        self._waiting_since = time.monotonic()
        self._arm()

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.header_deadline_s, self._expire, self._served)

    def _expire(self, served: int) -> None:
        if self._waiting_since is None or served != self._served or self.transport.is_closing():
            return  # a request came since the deadline was set
        unsent = self.transport.get_write_buffer_size()
        if unsent and unsent != self._unsent:  # still taking the last response: wait on
            self._unsent = unsent
            self._arm()
            return
        self.transport.abort()  # idle, or stopped reading what it was sent

    def _make_room(self) -> bool:
        waiting = [c for c in self.connections
                   if isinstance(c, GuardedH11Protocol) and c is not self and c._waiting_since is not None
                   and not c.transport.is_closing()]
        if not waiting:
            log.warning("refused a connection: all %d are serving requests", len(self.connections) - 1)
            return False
        oldest = min(waiting, key=lambda c: c._waiting_since or 0.0)
        oldest.transport.close()
        return True

    async def _close_and_wait(self) -> None:
        self.transport.abort()  # what is buffered for a client that stopped reading is dropped
        await self._lost.wait()


def closer(scope: MutableMapping[str, Any]) -> Callable[[], Awaitable[None]] | None:
    """The scope's way to close its connection, where the server offers one."""
    close: Callable[[], Awaitable[None]] | None = scope.get("extensions", {}).get(CLOSE_KEY)
    return close
