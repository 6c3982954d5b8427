"""A streamed response's middle chunks, written straight to its connection.

uvicorn's send takes every body message through the middleware's send wrappers (Starlette's
error and exception handlers, the access log, CORS) and then h11's state machine: some twenty
Python calls for one write of a few hundred bytes, of about 150 the loop makes per streamed token.
At one client on a CPU the event loop writes a chunk per token while llama.cpp decodes on every
core, so each of those calls is taken from the decoding threads (SmolLM2 on two cores, one client:
the loop spent 0.39 ms of CPU per streamed token; 0.36 with this writer).

So the connection offers a writer in the ASGI scope (`scope["extensions"][WRITER_KEY]`) for the
chunks between a response's start and its end: it frames one as h11 would (chunked encoding) and
hands it to the transport. What it cannot write itself it passes to uvicorn's send: a paused or closed
connection, a body h11 does not frame in chunks (an HTTP/1.0 client, a HEAD request), anything but a
middle chunk. The start and the last message still go through the middleware (generate.py's
EventSourceResponse sends them there), so every middleware sees a response begin and end; none of
this server's middleware reads or changes a body in between.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from h11._writers import ChunkedWriter
from starlette.types import Message, Send
from uvicorn.protocols.http.h11_impl import RequestResponseCycle

WRITER_KEY = "prefill.chunk_writer"
CYCLE_KEY = "prefill.cycle"  # the connection's uvicorn cycle, for the scheduler thread's writes (direct_writes.py)


def writes_chunks(cycle: RequestResponseCycle) -> bool:
    """Whether a middle chunk of `cycle`'s response may go straight to its transport."""
    return (cycle.response_started and not cycle.response_complete and not cycle.disconnected
            and not cycle.flow.write_paused and type(getattr(cycle.conn, "_writer", None)) is ChunkedWriter
            and cycle.scope.get("method") != "HEAD")


def frame(body: bytes) -> bytes:
    """One chunk of HTTP/1.1 chunked encoding, as h11 frames it (an empty one would read as the end)."""
    return b"%x\r\n%b\r\n" % (len(body), body)


def chunk_writer(cycle: RequestResponseCycle) -> Callable[[Message], Awaitable[None]]:
    """The writer of `cycle`'s middle body chunks (see the module's docstring)."""
    transport = cycle.transport

    async def write(message: Message) -> None:
        if message.get("more_body") and message["type"] == "http.response.body" and writes_chunks(cycle):
            body = message.get("body", b"")
            if body:  # h11 writes nothing for an empty chunk: its framing would read as the end
                transport.write(frame(body))
            return
        await cycle.send(message)  # type: ignore[arg-type]  # a Starlette Message: uvicorn types its events

    return write


def writer_of(scope: MutableMapping[str, Any], send: Send) -> Send:
    """The scope's chunk writer where its connection offers one, else `send`."""
    writer: Send = scope.get("extensions", {}).get(WRITER_KEY, send)
    return writer
