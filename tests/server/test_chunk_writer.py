"""A streamed answer's middle chunks go straight to the connection (chunk_writer.py), framed as h11
frames them: the wire still reads as HTTP/1.1 chunked encoding, a kept-alive connection serves the
next request, and a client that h11 does not answer in chunks (HTTP/1.0) is served through uvicorn's
own send. A real server on the tiny model, in this process; h11's `Connection.send` is counted."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import h11
import pytest

from prefill.engine.settings import LoadSettings
from prefill.server.lifecycle import RunningServer, ServeOptions


@pytest.fixture(scope="module")
def served(tiny_model: Path) -> Iterator[RunningServer]:
    options = ServeOptions(tiny_model, LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1), port=0, parallel=1)
    server = RunningServer.open(options)
    server.start_thread()
    yield server
    server.stop()


@pytest.fixture
def h11_sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every event h11 was asked to write, in order."""
    sent: list[str] = []
    real = h11.Connection.send

    def counted(self: h11.Connection, event: object) -> bytes | None:
        sent.append(type(event).__name__)
        return real(self, event)  # type: ignore[arg-type]

    monkeypatch.setattr(h11.Connection, "send", counted)
    return sent


def _request(version: bytes, tokens: int) -> bytes:
    body = json.dumps({"model": "tiny", "stream": True, "max_tokens": tokens, "temperature": 0,
                       "messages": [{"role": "user", "content": "count"}]}).encode()
    return (b"POST /v1/chat/completions HTTP/%s\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (version, len(body), body))


def _read_chunked(f: BinaryIO) -> tuple[bytes, list[bytes]]:
    """A response's head and its chunks, read by the chunked framing itself (a wrong size breaks it)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += f.readline()
    chunks = []
    while True:
        size = int(f.readline().strip(), 16)
        data = f.read(size + 2)
        assert data.endswith(b"\r\n"), data[-10:]
        if size == 0:
            return head, chunks
        chunks.append(data[:-2])


def _events(body: bytes) -> list[str]:
    """The SSE `data:` payloads a body carries, whole."""
    text = body.decode()
    assert text.endswith("\n\n")
    return [block.removeprefix("data: ") for block in text.strip().split("\n\n")]


def test_a_stream_s_chunks_skip_h11_and_still_read_as_chunked_encoding(served: RunningServer,
                                                                        h11_sends: list[str]) -> None:
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s, s.makefile("rb") as f:
        for _ in range(2):  # kept alive: h11 is ready for the next request after a bypassed body
            h11_sends.clear()
            s.sendall(_request(b"1.1", 12))
            head, chunks = _read_chunked(f)
            assert head.startswith(b"HTTP/1.1 200 ")
            assert b"transfer-encoding: chunked" in head.lower()
            events = _events(b"".join(chunks))
            assert events[-1] == "[DONE]"
            answer = [json.loads(e) for e in events[:-1]]
            assert answer[0]["choices"][0]["delta"]["role"] == "assistant"
            assert answer[-1]["choices"][0]["finish_reason"] == "length"
            assert len(chunks) >= 3
            # the head, the empty last body and its end: none of the chunks between
            assert h11_sends == ["Response", "Data", "EndOfMessage"]


def test_an_http_1_0_client_is_answered_through_uvicorn_s_send(served: RunningServer,
                                                                 h11_sends: list[str]) -> None:
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(_request(b"1.0", 6))
        got = b""
        while data := s.recv(65536):  # HTTP/1.0: the body ends where the connection closes
            got += data
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"transfer-encoding" not in head.lower()
    events = _events(body)
    assert events[-1] == "[DONE]"
    assert json.loads(events[-2])["choices"][0]["finish_reason"] == "length"
    assert h11_sends.count("Data") >= 3  # every chunk went through h11, which frames HTTP/1.0 itself
