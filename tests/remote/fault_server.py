"""An OpenAI-shaped endpoint written with http.server, on 127.0.0.1, that fails on purpose.

`mode` picks the answer: "ok" streams a full answer (reasoning_content, content, usage,
llama.cpp-style `timings`, [DONE]); "cut" streams two chunks then drops the connection;
"401", "404", "429" answer that status with an OpenAI error body; "error_event" sends an
error as a stream event after one chunk; "hold" goes silent after the first words, "silent"
before its headers, each until `release` (or 30 s). Each request's headers and body are kept.

Endless answers, each `ENDLESS_BYTES` long unless the client hangs up first (`hung_up` is then
set): "endless_body" a /models list that never ends; "endless_error" a 401 whose body never ends;
"endless_line" (after the first words) a chunk without its newline; "endless_event" (after
the first words) an event of many `data:` lines that never meets its blank line.

Tool calls, `CALLS` each time, cut as different servers cut them: "calls_split" id and name
first, then the arguments one character a chunk (OpenAI, vLLM); "calls_interleaved" the two
calls' fragments alternating by index; "calls_late" the arguments first, the name repeated, the id
last, and finish_reason "stop" (llama.cpp's server, Ollama); "calls_whole" both whole in one chunk,
without indices; "calls_reply" a whole JSON reply, `stream` ignored. "calls_endless" opens a call
whose arguments never end.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ENDLESS_BYTES = 200 * 2**20
_PIECE = 64 * 2**10  # written again and again: the server's own memory stays small


# (id, name, arguments): escapes, braces in a string and a non-ASCII letter, to be cut anywhere
CALLS = (("call_a", "weather", '{"city": "Troms\u00f8", "note": "a \\"quoted\\" {brace}"}'),
         ("call_b", "clock", '{"zone": "Europe/Oslo"}'))


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    obj = {"id": "c1", "object": "chat.completion.chunk", "model": "fake",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return f"data: {json.dumps(obj)}\n\n".encode()


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = "ok"
        self.requests: list[tuple[dict[str, str], Any]] = []
        self.release = threading.Event()  # "hold" mode waits for it between chunks
        self.holding = threading.Event()  # set while "hold" mode waits
        self.hung_up = threading.Event()  # an endless mode's client closed the connection
        self.sent = 0  # bytes of the last endless answer written

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FaultServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _status(self, code: int, message: str) -> None:
        body = json.dumps({"error": {"message": message, "type": "test"}}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if code == 429:
            self.send_header("Retry-After", "7")
        self.end_headers()
        self.wfile.write(body)

    def _endless(self, head: bytes, piece: bytes) -> None:
        """Write `head`, then `piece` again and again up to ENDLESS_BYTES, until the client hangs up."""
        block = piece * max(1, _PIECE // len(piece))
        self.server.sent = 0
        try:
            self.wfile.write(head)
            while self.server.sent < ENDLESS_BYTES:
                self.wfile.write(block)
                self.server.sent += len(block)
        except OSError:  # reset or broken pipe: the client closed it
            self.server.hung_up.set()
        self.close_connection = True

    def _endless_headers(self, code: int, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")  # no length: the body ends when the connection does
        self.end_headers()

    def do_GET(self) -> None:
        self.server.requests.append((dict(self.headers), None))
        if self.server.mode == "endless_body":
            self._endless_headers(200, "application/json")
            self._endless(b'{"object": "list", "data": [', b'{"id": "fake", "object": "model"}, ')
            return
        if self.server.mode == "endless_error":
            self._endless_headers(401, "application/json")
            self._endless(b'{"error": {"message": "', b"no ")
            return
        if self.server.mode in ("401", "404", "429"):
            self._status(int(self.server.mode), f"fake {self.server.mode}")
            return
        body = json.dumps({"object": "list", "data": [{"id": "fake-a", "object": "model"},
                                                       {"id": "fake-b", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.server.requests.append((dict(self.headers), json.loads(self.rfile.read(length))))
        mode = self.server.mode
        if mode in ("401", "404", "429"):
            self._status(int(mode), f"fake {mode}")
            return
        if mode == "endless_error":
            self._endless_headers(401, "application/json")
            self._endless(b'{"error": {"message": "', b"no ")
            return
        if mode == "silent":
            self._hold()
        if mode == "calls_reply":
            self._reply_calls()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for part in (self._call_parts(mode) if mode.startswith("calls_") else self._parts(mode)):
            self.wfile.write(part)
            self.wfile.flush()
        if mode == "endless_line":
            self._endless(b'data: {"choices": [{"index": 0, "delta": {"content": "', b"and on ")
        elif mode == "endless_event":
            self._endless(b"", b"data: " + b"x" * 1000 + b"\n")
        elif mode == "calls_endless":
            self._endless(b"", chunk({"tool_calls": [{"index": 0, "function": {"arguments": "x" * 1000}}]}))
        self.close_connection = True

    def _parts(self, mode: str) -> Iterator[bytes]:
        yield b": ping\n\n"
        yield chunk({"role": "assistant"})
        yield chunk({"reasoning_content": "Let me think."})
        yield chunk({"content": "Hello"})
        if mode in ("cut", "endless_line", "endless_event"):
            return
        if mode == "error_event":
            yield f"data: {json.dumps({'error': {'message': 'the model crashed'}})}\n\n".encode()
            return
        if mode == "hold":
            self._hold()
        yield chunk({"content": ", world"})
        yield chunk({}, "stop")
        usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
        timings = {"prompt_n": 4, "cache_n": 8, "prompt_ms": 2.0, "prompt_per_second": 2000.0,
                   "predicted_per_second": 55.5}
        obj = {"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": usage, "timings": timings}
        yield f"data: {json.dumps(obj)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    def _hold(self) -> None:
        self.server.holding.set()
        self.server.release.wait(30)
        self.server.holding.clear()

    def _call_parts(self, mode: str) -> Iterator[bytes]:
        def frag(index: int | None, **part: Any) -> bytes:
            return chunk({"tool_calls": [part if index is None else {"index": index, **part}]})

        def head(i: int) -> dict[str, Any]:
            return {"id": CALLS[i][0], "type": "function", "function": {"name": CALLS[i][1], "arguments": ""}}

        yield chunk({"role": "assistant", "content": ""})
        finish = "tool_calls"
        if mode == "calls_split":
            yield chunk({"content": "Checking."})
            for i, (_, _, args) in enumerate(CALLS):
                yield frag(i, **head(i))
                for ch in args:
                    yield frag(i, function={"arguments": ch})
        elif mode == "calls_interleaved":
            yield frag(0, **head(0))
            yield frag(1, **head(1))
            a, b = CALLS[0][2], CALLS[1][2]
            for k in range(0, max(len(a), len(b)), 3):
                for i, args in ((1, b), (0, a)):
                    if args[k:k + 3]:
                        yield frag(i, function={"arguments": args[k:k + 3]})
        elif mode == "calls_late":
            for i, (call_id, name, args) in enumerate(CALLS):
                yield frag(i, function={"arguments": args[:5]})
                yield frag(i, type="function", function={"name": name})
                yield frag(i, type="function", function={"name": name, "arguments": args[5:]})
                yield frag(i, id=call_id, type="function", function={"name": name})
            finish = "stop"
        elif mode == "calls_whole":
            calls = [{"id": c, "type": "function", "function": {"name": n, "arguments": a}} for c, n, a in CALLS]
            yield chunk({"tool_calls": calls})
            finish = "stop"
        elif mode == "calls_endless":
            yield frag(0, **head(0))
            return
        yield chunk({}, finish)
        yield b"data: [DONE]\n\n"

    def _reply_calls(self) -> None:
        calls = [{"id": c, "type": "function", "function": {"name": n, "arguments": a}} for c, n, a in CALLS]
        message = {"role": "assistant", "content": None, "tool_calls": calls}
        body = json.dumps({"id": "c1", "object": "chat.completion", "model": "fake",
                           "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                           "usage": {"prompt_tokens": 12, "completion_tokens": 20, "total_tokens": 32}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
