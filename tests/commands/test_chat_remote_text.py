"""`prefill chat --remote`: what a server says (its model ids, its answer and thinking cut into
chunks anywhere, its errors) reaches the terminal through the one filter, as the model's does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
EVIL_ID = "evil\u202e\x1b[2J-model"
# The answer cut inside its escape sequences: ESC alone in one chunk, the rest in the next.
THINKING = ("Hm\x1b", "[8m", "m\x07")
ANSWER = ("Hello\x1b", "]0;Title\x07 wo", "rld\u202e\r\x08!")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, code: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        models = [{"id": EVIL_ID, "object": "model"}, {"id": "m", "object": "model"}]
        self._json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for delta in [{"role": "assistant"}, *({"reasoning_content": t} for t in THINKING),
                      *({"content": t} for t in ANSWER)]:
            self.wfile.write(_event(delta))
        self.wfile.write(_event({}, "stop"))
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True


def _event(delta: dict[str, str], finish: str | None = None) -> bytes:
    obj = {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                       "finish_reason": finish}]}
    return f"data: {json.dumps(obj)}\n\n".encode()


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def chat(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "data"))
    return subprocess.run([sys.executable, "-m", "prefill", "chat", "--remote", url, "--prompt", "Hi", *args],
                          capture_output=True, text=True, env=env, timeout=60, check=False)


def test_a_servers_answer_and_model_id_are_shown_escaped(server: str, tmp_path: Path) -> None:
    out = chat(tmp_path, server)  # no --model: the first listed, the hostile id, is used and named
    assert out.returncode == 0, out.stderr
    err = out.stderr.replace("\x1b[2m[thinking] ", "").replace("\x1b[0m", "")  # the program's own dimming
    for stream in (out.stdout, err):
        assert "\x1b" not in stream and "\r" not in stream and not OBEYED.search(stream), repr(stream)
    assert out.stdout.startswith("Hello\\x1b]0;Title\\x07 world\\u202e\\r\\x08!")
    assert "\x1b[2m[thinking] Hm\\x1b[8mm\\x07\x1b[0m" in out.stderr  # dimmed by the program, escaped inside
    assert "prefill: evil\\u202e\\x1b[2J-model at " in out.stderr


def test_a_servers_model_ids_quoted_in_an_error_are_escaped(server: str, tmp_path: Path) -> None:
    out = chat(tmp_path, server, "--model", "nope")
    assert out.returncode == 1 and "does not list the model 'nope'" in out.stderr
    assert "evil\\u202e\\x1b[2J-model, m" in out.stderr and not OBEYED.search(out.stderr), repr(out.stderr)


def test_json_lines_carry_the_servers_words_as_escapes(server: str, tmp_path: Path) -> None:
    out = chat(tmp_path, server, "--model", "m", "--json")
    assert out.returncode == 0, out.stderr
    assert not OBEYED.search(out.stdout) and "\x1b" not in out.stderr
    assert json.loads(out.stdout)["answer"] == "".join(ANSWER)
