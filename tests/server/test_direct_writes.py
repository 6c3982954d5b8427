"""A stream's tokens written by the scheduler thread (direct_writes.py): on the wire the same answer as
the whole reply, framed as HTTP/1.1 chunks; a client that stops reading gets the rest, in order, once it
reads again (the loop takes the stream back and writes what the socket did not take first); a client that
hangs up frees its slot, and no stream keeps a socket open once its response has ended. A real server on
the tiny model, in this process."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from prefill.server import connections
from prefill.server.direct_writes import DirectWrites
from prefill.server.lifecycle import RunningServer
from tests.server.test_chunk_writer import _events, _read_chunked

pytestmark = pytest.mark.skipif(not DirectWrites.possible(), reason="no libc send to write with")


@pytest.fixture
def flushes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, int]]:
    """Every flush of the scheduler thread that wrote or handed back: (kept the stream, bytes left over)."""
    seen: list[tuple[bool, int]] = []
    real = DirectWrites.flush

    def counted(self: DirectWrites) -> bool:
        wrote = bool(self.on and self.pending)
        kept = real(self)
        if wrote or not kept:
            seen.append((kept, len(self.left)))
        return kept

    monkeypatch.setattr(DirectWrites, "flush", counted)
    return seen


def _request(tokens: int, stream: bool = True) -> bytes:
    body = json.dumps({"model": "tiny", "stream": stream, "max_tokens": tokens, "temperature": 0, "ignore_eos": True,
                       "messages": [{"role": "user", "content": "count"}]}).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def _address(tiny_served: RunningServer) -> tuple[str, int]:
    host, port = tiny_served.url.removeprefix("http://").split(":")
    return host, int(port)


def _streamed_text(chunks: list[bytes]) -> str:
    events = _events(b"".join(chunks))
    assert events[-1] == "[DONE]"
    answer = [json.loads(e) for e in events[:-1]]
    assert answer[-1]["choices"][0]["finish_reason"] == "length"
    return "".join(a["choices"][0]["delta"].get("content", "") for a in answer)


def _whole_text(tiny_served: RunningServer, tokens: int) -> str:
    with socket.create_connection(_address(tiny_served), timeout=30) as s, s.makefile("rb") as f:
        s.sendall(_request(tokens, stream=False))
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += f.readline()
        length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
        text: str = json.loads(f.read(length))["choices"][0]["message"]["content"]
        return text


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def _steady_files() -> int:
    """The process's open files once the server has closed the connections of the requests before."""
    last = -1
    while (now := _open_files()) != last:
        last = now
        time.sleep(0.2)
    return now


def _settles(count: int, deadline_s: float = 10.0) -> bool:
    """The process's open files fall back to `count` (a response's end is the loop's: it may trail the client)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if _open_files() <= count:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc to count open files")
def test_the_scheduler_thread_writes_the_tokens_and_the_wire_reads_as_the_whole_answer(
        tiny_served: RunningServer, flushes: list[tuple[bool, int]]) -> None:
    whole = _whole_text(tiny_served, 40)
    files = _steady_files()
    with socket.create_connection(_address(tiny_served), timeout=30) as s, s.makefile("rb") as f:
        for _ in range(2):  # kept alive: the loop ends each response through h11, ready for the next request
            flushes.clear()
            s.sendall(_request(40))
            head, chunks = _read_chunked(f)
            assert head.startswith(b"HTTP/1.1 200 ")
            assert _streamed_text(chunks) == whole
            assert flushes and all(kept for kept, _ in flushes)  # written by the scheduler thread, none handed back
        assert _settles(files + 2)  # this connection's two ends, no duplicate left per stream
    assert _settles(files)


def test_a_client_that_stops_reading_gets_the_rest_in_order_once_it_reads(
        tiny_served: RunningServer, flushes: list[tuple[bool, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _whole_text(tiny_served, 1500)
    monkeypatch.setattr(connections, "SEND_BUFFER_BYTES", 4096)  # the server's socket and transport fill sooner
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect(_address(tiny_served))
        s.sendall(_request(1500))
        deadline = time.monotonic() + 20
        while not any(not kept for kept, _ in flushes) and time.monotonic() < deadline:
            time.sleep(0.01)  # not reading: the socket takes part of a chunk, then none
        assert any(not kept for kept, _ in flushes), "the scheduler thread never met a full socket"
        with s.makefile("rb") as f:
            head, chunks = _read_chunked(f)
    assert head.startswith(b"HTTP/1.1 200 ")
    assert _streamed_text(chunks) == whole


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc to count open files")
def test_a_client_that_hangs_up_mid_stream_frees_its_slot_and_its_socket(
        tiny_served: RunningServer, flushes: list[tuple[bool, int]]) -> None:
    _whole_text(tiny_served, 8)
    files = _steady_files()
    with socket.create_connection(_address(tiny_served), timeout=30) as s, s.makefile("rb") as f:
        s.sendall(_request(1500))
        while not f.readline().startswith(b"data: {"):
            pass  # the head, then the first chunk
        deadline = time.monotonic() + 20
        while not flushes and time.monotonic() < deadline:
            time.sleep(0.005)
        assert flushes  # the scheduler thread has written some
    assert _settles(files)  # the duplicate the scheduler thread wrote to is closed with the response
    assert _whole_text(tiny_served, 8)  # the one slot is free again
