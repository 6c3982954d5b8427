"""A server process over stdio, read in bounded lines: Prefill's own read side of the MCP stdio transport.

The SDK's `stdio_client` joins a line's chunks by copying the whole line so far for every chunk,
so a long line costs time that grows with its square (a 100 MB answer took a minute, ran past its
call's limit and got its server marked failed), and it logs a traceback for every line that is
not JSON-RPC. Here the process is started and stopped with the SDK's own functions (its process
group, and stdin closed, then SIGTERM, then SIGKILL, each after a bounded wait), but stdout is
split into lines in time linear in its bytes, and a line longer than `MAX_MESSAGE_BYTES` is never
held whole: its first `KEEP_HEAD_BYTES` and last `KEEP_TAIL_BYTES` are kept while the rest is
read and dropped, and it reaches the session as a message of its own making (`oversized.py`).
A line that is not JSON-RPC reaches the session's reader as an exception value, unlogged; the
connection counts and quotes those.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TextIO

import anyio
import mcp_types as types
from anyio.abc import ByteReceiveStream
from anyio.streams.memory import MemoryObjectSendStream

# The SDK's process handling (spawn in a group of its own, the stop sequence, the inherited
# environment): used as it is, so a server is started and stopped exactly as the SDK does.
from mcp.client._transport import TransportStreams
from mcp.client.stdio import (
    _create_platform_compatible_process,
    _get_executable_command,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage

from prefill.mcp_tools.config import StdioServer
from prefill.mcp_tools.oversized import Oversized, oversized_message

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # a longer line is cut: an image of a few MB still passes whole
KEEP_HEAD_BYTES = 1024 * 1024  # of a cut line: what its answer's text is taken from
KEEP_TAIL_BYTES = 4 * 1024  # and its end, where its id or isError may be
READ_BYTES = 256 * 1024
WRITER_FLUSH_S = 0.5  # on close: how long messages already accepted may take to be written


class LineSplitter:
    """Bytes in, lines out (without their newline), in time linear in the bytes.

    Memory stays under `limit` (plus one chunk): a line longer than that comes out as `Oversized`,
    its head and tail kept and its size counted.
    """

    def __init__(self, limit: int = MAX_MESSAGE_BYTES, keep_head: int = KEEP_HEAD_BYTES,
                 keep_tail: int = KEEP_TAIL_BYTES):
        self._limit = limit
        self._keep_head = min(keep_head, limit)
        self._keep_tail = keep_tail
        self._buf = bytearray()
        self._over = False
        self._size = 0
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines `chunk` completes."""
        lines: list[bytes | Oversized] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._add(chunk[start:] if end < 0 else chunk[start:end])
            if end < 0:
                return lines
            lines.append(self._take())
            start = end + 1

    def finish(self) -> list[bytes | Oversized]:
        """The last line, when the output ended without a newline."""
        return [self._take()] if self._buf or self._over else []

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        if self._over:
            self._size += len(piece)
            self._tail = (self._tail + piece[-self._keep_tail:])[-self._keep_tail:]
            return
        self._buf += piece
        if len(self._buf) > self._limit:
            self._over = True
            self._size = len(self._buf)
            self._tail = bytes(self._buf[-self._keep_tail:])
            del self._buf[self._keep_head:]

    def _take(self) -> bytes | Oversized:
        line: bytes | Oversized = Oversized(bytes(self._buf), self._tail, self._size) if self._over \
            else bytes(self._buf)
        self._buf = bytearray()
        self._over, self._size, self._tail = False, 0, b""
        return line


class NotMcp(Exception):
    """A line on a server's stdout that is not a JSON-RPC message (as the session's reader gets it)."""

    def __init__(self, line: str):
        super().__init__(line)
        self.line = line


def parse_line(line: bytes | Oversized) -> SessionMessage | Exception | None:
    """One line as the session gets it: a message, an exception value for a line that is not one,
    or None for a blank line."""
    if isinstance(line, Oversized):
        return oversized_message(line)
    text = line.decode("utf-8", "replace")
    if not text.strip():
        return None
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError:
        return NotMcp(text)


@asynccontextmanager
async def stdio_transport(server: StdioServer, errlog: TextIO) -> AsyncIterator[TransportStreams]:
    """Start `server`'s process and talk MCP over its stdin and stdout; leaving stops it.

    Raises:
        OSError: The process could not be started (no such command, no such folder…).
    """
    command = await _get_executable_command(server.command)
    process = await _create_platform_compatible_process(
        command=command, args=list(server.args), env=get_default_environment() | dict(server.env),
        errlog=errlog, cwd=server.cwd or None)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    assert process.stdout is not None and process.stdin is not None
    stdout, stdin = process.stdout, process.stdin

    async def read() -> None:
        await _read_lines(stdout, read_send)

    async def write() -> None:
        try:
            async with write_receive:
                async for message in write_receive:
                    body = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(body.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the server no longer reads: its session sees the end, not a hang
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(write)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):  # the process must stop even when the caller is cancelled
                read_receive.close()  # the reader drops what still comes, so a server stuck writing can exit
                write_send.close()
                with anyio.move_on_after(WRITER_FLUSH_S):
                    await writer_done.wait()
                await _stop_server_process(process)
                for stream in (read_receive, write_send, read_send, write_receive):
                    await stream.aclose()
            tg.cancel_scope.cancel()


async def _read_lines(stdout: ByteReceiveStream, send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    """Hand each line of `stdout` on, until it ends; once nobody takes them, read and drop the rest."""
    splitter = LineSplitter()
    ended = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError)
    try:
        async with send:
            while True:
                try:
                    chunk = await stdout.receive(READ_BYTES)
                except ended:
                    break
                for line in splitter.feed(chunk):
                    item = parse_line(line)
                    if item is not None:
                        await send.send(item)
            for line in splitter.finish():
                item = parse_line(line)
                if item is not None:
                    await send.send(item)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    with anyio.CancelScope(shield=True), suppress(*ended):
        while True:  # ends when the process's stdout closes (its exit, or the stop sequence closing it)
            await stdout.receive(READ_BYTES)

