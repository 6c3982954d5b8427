"""Request bodies that never end: a body must keep arriving at a minimum rate after a grace, or its
connection is closed (408) and its place under the connection cap freed; meanwhile it may be closed
to make room for a new client. A real server on the tiny model, in this process; each test sets the
body's grace and rate on the protocol (read when a body starts), so it waits on the close, not on
the default seconds."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from prefill.engine.settings import LoadSettings
from prefill.server.connections import GuardedH11Protocol
from prefill.server.lifecycle import RunningServer, ServeOptions

CAP = 16
HEAD = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")


@pytest.fixture(scope="module")
def served(tiny_model: Path) -> Iterator[RunningServer]:
    options = ServeOptions(tiny_model, LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1), port=0,
                           parallel=1, max_connections=CAP)
    server = RunningServer.open(options)
    server.start_thread()
    yield server
    server.stop()


def _pace(monkeypatch: pytest.MonkeyPatch, grace_s: float, rate: float) -> None:
    monkeypatch.setattr(GuardedH11Protocol, "body_grace_s", grace_s)
    monkeypatch.setattr(GuardedH11Protocol, "body_min_rate", rate)


def _connect(server: RunningServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _answer_on_close(s: socket.socket, within: float) -> bytes | None:
    """What the server wrote before it closed `s`, or None if it was still open after `within` s."""
    s.settimeout(within)
    got = b""
    try:
        while chunk := s.recv(65536):
            got += chunk
    except (ConnectionResetError, BrokenPipeError):
        pass
    except TimeoutError:
        return None
    return got


def _reading_body(server: RunningServer) -> socket.socket:
    """A request whose body the server has started reading (its "100 Continue" came), one byte of
    the 50,000 promised sent, and nothing more."""
    s = _connect(server)
    s.sendall(HEAD + b"Expect: 100-continue\r\nContent-Length: 50000\r\n\r\n")
    answer = s.recv(1024)
    assert answer.startswith(b"HTTP/1.1 100 "), answer
    s.sendall(b"{")
    return s


def test_a_body_that_never_ends_is_closed_at_its_deadline_with_408(served: RunningServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _pace(monkeypatch, grace_s=0.5, rate=8192)
    s = _connect(served)
    try:
        s.sendall(HEAD + b"Content-Length: 50000\r\n\r\n{")  # one byte of 50,000
        answer = _answer_on_close(s, within=20)
        assert answer is not None, "still open"
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"too slowly" in answer
    finally:
        s.close()


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_body_trickled_under_the_minimum_rate_is_closed(served: RunningServer, monkeypatch: pytest.MonkeyPatch,
                                                          framing: str) -> None:
    _pace(monkeypatch, grace_s=0.3, rate=4096)
    s = _connect(served)
    chunked = framing == "chunked"
    s.sendall(HEAD + (b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Content-Length: 50000\r\n\r\n"))
    piece = b"8\r\n        \r\n" if chunked else b" " * 8
    end = time.monotonic() + 20
    try:
        while True:  # about 80 bytes a second, until the server hangs up
            try:
                s.sendall(piece)
            except (ConnectionResetError, BrokenPipeError):
                break
            if _answer_on_close(s, within=0.1) is not None:
                break
            assert time.monotonic() < end, "a body trickled at 80 B/s was never closed"
    finally:
        s.close()


def test_an_honest_body_sent_for_longer_than_the_grace_is_answered(served: RunningServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _pace(monkeypatch, grace_s=0.3, rate=8192)
    chat = {"model": served.model_id, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    body = json.dumps(chat).encode() + b" " * 40_000  # JSON may end in white space
    s = _connect(served)
    try:
        s.sendall(HEAD + b"Content-Length: %d\r\n\r\n" % len(body))
        start = time.monotonic()
        for i in range(0, len(body), 4000):  # 40 KB/s, for about a second: five times the minimum rate
            s.sendall(body[i:i + 4000])
            time.sleep(0.1)
        assert time.monotonic() - start > 0.3  # it did outlast the grace
        s.settimeout(30)
        answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 "), answer
    finally:
        s.close()


def test_health_answers_while_slow_bodies_fill_the_connection_cap(served: RunningServer,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _pace(monkeypatch, grace_s=120, rate=8192)  # none reaches its deadline in this test
    socks = [_reading_body(served) for _ in range(CAP)]
    try:
        for _ in range(3):  # each check closes the slow body nearest its deadline to make room
            assert httpx.get(served.url + "/health", timeout=10).status_code == 200
        closed = [s for s in socks if _answer_on_close(s, within=0.01) is not None]
        assert closed and closed == socks[:len(closed)]  # the first sent first: nearest its deadline
    finally:
        for s in socks:
            s.close()
