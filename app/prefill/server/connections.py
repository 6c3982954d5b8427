"""Connections that hold: deadlines for a request's headers and body, a cap on open connections,
and a way for a response to close its own connection.

uvicorn times out a kept-alive connection between requests, but not one that never finishes
its headers or its body, and accepts connections until the process runs out of file descriptors
(a desktop's limit is often 1,024). So, on top of uvicorn's h11 protocol:

- a connection that has not sent a whole request's headers within `header_deadline_s` of
  opening (or of its last response) is closed, as is one whose client stopped taking its response;
- a request's body must keep arriving (BodyPace): after `body_grace_s`, `body_min_rate` bytes a
  second on average, whether it has a Content-Length or comes in chunks; one that falls behind
  gets a 408 and its connection is closed;
- little is buffered for a client (SEND_BUFFER_BYTES), so one that stops reading a stream blocks its
  writes soon, and generate.EventSourceResponse drops it;
- past `max_connections`, the connection nearest its deadline among those still waiting for a
  request (its headers, or the rest of its body) is closed to make room for the new one; when every
  connection is serving a request, the new one gets a 503 with `Retry-After` instead;
- the ASGI scope carries `prefill.close_connection`, which a response calls to drop a client
  that stopped reading (generate.EventSourceResponse); the call returns once it is closed;
- and `prefill.chunk_writer`, which writes a streamed response's middle chunks straight to the
  connection (chunk_writer.py).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import h11
from starlette.types import Receive
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from prefill.server.chunk_writer import CYCLE_KEY, WRITER_KEY, chunk_writer
from prefill.server.cost_bounds import BODY_GRACE_S, BODY_MIN_BYTES_S

log = logging.getLogger(__name__)
HEADER_DEADLINE_S = 10.0
MAX_CONNECTIONS = 512
# What may wait, unsent, for one client: in the socket and in the transport. Small, so that a client
# that stops reading blocks the response's writes (and is dropped) within a few hundred tokens.
SEND_BUFFER_BYTES = 32 * 1024
SPARE_FILES = 64  # descriptors kept for the model, the database, logs
BODY_CHECK_S = 0.25  # the least time between two looks at a body's pace: a timer per byte is waste
CLOSE_KEY = "prefill.close_connection"


def _refusal(status: bytes, message: bytes, kind: bytes, extra: bytes = b"") -> bytes:
    body = b'{"error": {"message": "%s", "type": "%s", "code": null}}' % (message, kind)
    return (b"HTTP/1.1 %s\r\n%sContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
            % (status, extra, len(body), body))


_FULL = _refusal(b"503 Service Unavailable", b"The server has too many connections.", b"server_error",
                 b"Retry-After: 2\r\n")
_SLOW = _refusal(b"408 Request Timeout", b"The request body came too slowly.", b"invalid_request_error")


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


class BodyPace:
    """The schedule a request body keeps: t seconds after its headers, at least
    `rate` × (t − `grace_s`) bytes of it have come."""

    def __init__(self, now: float, grace_s: float, rate: float):
        self.grace_s = grace_s
        self.rate = rate
        self.owed_from = now + grace_s  # bytes are owed from then on
        self.got = 0

    def due(self) -> float:
        """When the body falls behind, if no more of it comes."""
        return self.owed_from + self.got / self.rate

    def excuse(self, now: float) -> None:
        """The server was not asking for the body (uvicorn pauses reading while the app has not taken
        what came): the client is not late, and has a new grace from now."""
        self.owed_from = max(self.owed_from, now + self.grace_s - self.got / self.rate)


class GuardedH11Protocol(H11Protocol):
    header_deadline_s = HEADER_DEADLINE_S
    max_connections = MAX_CONNECTIONS
    body_grace_s = BODY_GRACE_S  # read when a body starts
    body_min_rate: float = BODY_MIN_BYTES_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._served = 0  # responses completed on this connection
        self._waiting_since: float | None = time.monotonic()  # for its headers; None once they came
        self._lost = asyncio.Event()
        self._deadline: asyncio.TimerHandle | None = None
        self._unsent = 0  # at the last deadline: a client still taking its last response is let be
        self._request: RequestResponseCycle | None = None  # the last request whose headers came
        self._pace: BodyPace | None = None  # while its body is arriving
        self._body_check: asyncio.TimerHandle | None = None
        if len(self.connections) > self.max_connections and not self._make_room():
            transport.write(_FULL)
            transport.close()
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        transport.set_write_buffer_limits(high=SEND_BUFFER_BYTES)
        self._arm()
        inner, close = self.app, self._close_and_wait

        async def app(scope: Any, receive: Any, send: Any) -> None:
            extensions = scope.setdefault("extensions", {})
            extensions[CLOSE_KEY] = close
            if isinstance(getattr(send, "__self__", None), RequestResponseCycle):  # uvicorn's send, bound
                extensions[WRITER_KEY] = chunk_writer(send.__self__)
                extensions[CYCLE_KEY] = send.__self__
            await inner(scope, receive, send)

        self.app = app

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for timer in (self._deadline, self._body_check):
            if timer is not None:
                timer.cancel()
        self._pace = None
        self._lost.set()

    def data_received(self, data: bytes) -> None:
        if self._pace is not None:
            self._pace.got += len(data)
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        self._follow_request()

    def on_response_complete(self) -> None:
        self._served += 1
        self._waiting_since = time.monotonic()  # before uvicorn reads a request sent meanwhile
        self._arm()
        super().on_response_complete()
        self._follow_request()

    def _follow_request(self) -> None:
        """Note a request whose headers came, and keep the pace of its body while it arrives (until
        its response is complete: the header deadline watches a connection from then on)."""
        cycle = self.cycle
        if cycle is not None and cycle is not self._request:
            self._request = cycle
            self._waiting_since = None
        arriving = (cycle is not None and not cycle.response_complete and self.conn.their_state is h11.SEND_BODY
                    and not self.transport.is_closing())
        if arriving and self._pace is None:
            self._pace = BodyPace(time.monotonic(), self.body_grace_s, self.body_min_rate)
            self._body_check = self.loop.call_later(self.body_grace_s, self._check_body)
        elif not arriving and self._pace is not None:
            self._pace = None
            if self._body_check is not None:
                self._body_check.cancel()

    def _check_body(self) -> None:
        pace = self._pace
        if pace is None or self.transport.is_closing():
            return
        now = time.monotonic()
        if self.flow.read_paused or self.cycle.waiting_for_100_continue:
            pace.excuse(now)  # the app has not asked for (the rest of) the body yet
        elif pace.due() <= now:
            self._too_slow()
            return
        self._body_check = self.loop.call_later(max(pace.due() - now, BODY_CHECK_S), self._check_body)

    def _too_slow(self) -> None:
        log.info("closed a connection whose request body came too slowly")
        self._pace = None
        if self.cycle.response_started:
            self.transport.abort()
        else:
            self.transport.write(_SLOW)
            self.transport.close()

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

    def _waits_until(self) -> float | None:
        """When this connection's deadline falls, while it waits for a request's headers or body."""
        if self.transport.is_closing():
            return None
        if self._pace is not None:
            return self._pace.due()
        if self._waiting_since is not None:
            return self._waiting_since + self.header_deadline_s
        return None

    def _make_room(self) -> bool:
        waiting = [(until, c) for c in self.connections if isinstance(c, GuardedH11Protocol) and c is not self
                   and (until := c._waits_until()) is not None]
        if not waiting:
            log.warning("refused a connection: all %d are serving requests", len(self.connections) - 1)
            return False
        _, nearest = min(waiting, key=lambda w: w[0])
        nearest.transport.close()
        return True

    async def _close_and_wait(self) -> None:
        self.transport.abort()  # what is buffered for a client that stopped reading is dropped
        await self._lost.wait()


async def disconnected(receive: Receive) -> None:
    """Returns when the client disconnects (its request's body has been read, so nothing else arrives)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def closer(scope: MutableMapping[str, Any]) -> Callable[[], Awaitable[None]] | None:
    """The scope's way to close its connection, where the server offers one."""
    close: Callable[[], Awaitable[None]] | None = scope.get("extensions", {}).get(CLOSE_KEY)
    return close
