"""The server's fault battery, the fast cases: each attack gets its status, and a live stream
started before them all finishes untouched. A real server on SmolLM2, in this process, with
short deadlines so that idle and stalled clients are seen within the test."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from prefill.engine.message import Message
from prefill.engine.settings import LoadSettings
from prefill.server.cost_bounds import PromptBounds, body_limit
from prefill.server.errors import ApiError
from prefill.server.lifecycle import RunningServer, ServeOptions

SETTINGS = LoadSettings(n_ctx=2048, n_gpu_layers="none", n_threads=1)
LONG = {"max_tokens": 100_000, "ignore_eos": True, "stream": True}


class Live:
    """A streamed answer read on a thread of its own, counted as it comes."""

    def __init__(self, base: str, body: dict[str, object], key: str = "live"):
        self.chunks = 0
        self.tokens = 0  # from the usage chunk, when asked for
        self.finish: str | None = None
        self.error: BaseException | None = None
        self.stop = threading.Event()  # the client goes away at its next line
        self._thread = threading.Thread(target=self._read, args=(base, body, key), daemon=True)
        self._thread.start()

    def _read(self, base: str, body: dict[str, object], key: str) -> None:
        try:
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.stream("POST", base + "/chat/completions", json=body, headers=headers, timeout=120) as r:
                assert r.status_code == 200, r.read()
                for line in r.iter_lines():
                    if self.stop.is_set():
                        return
                    if line.startswith("data: {"):
                        chunk = json.loads(line[6:])
                        if chunk.get("usage"):
                            self.tokens = chunk["usage"]["completion_tokens"]
                        if chunk["choices"]:
                            self.chunks += 1
                            self.finish = chunk["choices"][0]["finish_reason"] or self.finish
        except BaseException as e:  # seen by the test
            self.error = e

    def join(self) -> None:
        self._thread.join(120)
        assert self.error is None, self.error


@pytest.fixture(scope="module")
def served(smollm2: Path) -> Iterator[RunningServer]:
    options = ServeOptions(smollm2, SETTINGS, port=0, parallel=2, max_queued=1, header_deadline_s=1.0,
                           write_deadline_s=1.0, max_connections=24)
    server = RunningServer.open(options)
    server.start_thread()
    yield server
    server.stop()


def _chat(server: RunningServer, **fields: object) -> dict[str, object]:
    return {"model": server.model_id, "messages": [{"role": "user", "content": "Say hello."}], **fields}


def _slots(server: RunningServer) -> dict[str, object]:
    return httpx.get(server.url + "/slots", timeout=10).json()


def _wait(server: RunningServer, check, timeout: float = 60) -> dict[str, object]:
    end = time.monotonic() + timeout
    while True:
        snap = _slots(server)
        if check(snap):
            return snap
        assert time.monotonic() < end, f"never reached: {snap}"
        time.sleep(0.05)


def _post(server: RunningServer, body: bytes, content_type: str = "application/json") -> httpx.Response:
    return httpx.post(server.url + "/v1/chat/completions", content=body, timeout=60,
                      headers={"Content-Type": content_type})


def test_each_attack_gets_its_status_while_a_live_stream_goes_on(served: RunningServer) -> None:
    base = served.url + "/v1"
    live = Live(base, _chat(served, max_tokens=150, ignore_eos=True, stream=True,
                            stream_options={"include_usage": True}))
    _wait(served, lambda s: s["busy"] == 1)
    cases = {
        "foreign host": httpx.get(base + "/models", headers={"Host": "attacker.example"}).status_code,
        "foreign origin": httpx.post(base + "/chat/completions", json=_chat(served),
                                     headers={"Origin": "http://evil.example"}).status_code,
        "simple post": _post(served, json.dumps(_chat(served)).encode(), "text/plain").status_code,
        "oversized body": _post(served, b'{"pad": "' + b"a" * (2 * 2**20) + b'"}').status_code,
        "deep nesting": _post(served, b"[" * 50_000 + b"]" * 50_000).status_code,
        "huge number": _post(served, b'{"model": ' + b"9" * 50_000 + b"}").status_code,
    }
    assert cases == {"foreign host": 421, "foreign origin": 403, "simple post": 415, "oversized body": 413,
                     "deep nesting": 400, "huge number": 400}
    live.join()
    assert live.finish == "length" and live.tokens == 150  # every token, then the end


def test_the_body_limit_follows_the_context(served: RunningServer) -> None:
    limit = body_limit(served.scheduler.n_ctx_seq)
    assert limit < 2**20  # a 2,048-token slot takes no 8 MiB body
    r = _post(served, b'{"pad": "' + b"a" * limit + b'"}')
    assert r.status_code == 413 and "no prompt that fits" in r.json()["error"]["message"]


def test_a_chat_that_cannot_fit_is_refused_before_its_template_renders(served: RunningServer) -> None:
    n_ctx = served.scheduler.n_ctx_seq
    many = [{"role": "user", "content": ""}] * (n_ctx + 1)
    r = httpx.post(served.url + "/v1/chat/completions", json={"model": served.model_id, "messages": many}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"
    assert f"{n_ctx + 1} messages" in r.json()["error"]["message"]
    assert r.elapsed.total_seconds() < 5  # refused without rendering 2,049 turns


def test_prompt_bounds_refuse_only_what_cannot_fit() -> None:
    bounds = PromptBounds(n_ctx_seq=100, longest_token_bytes=10)  # at most 1,000 bytes could fit
    bounds.check_messages([Message("user", "x" * 500), Message("assistant", "y" * 499)])  # 999 bytes: may fit
    bounds.check_text("é" * 500)  # 1,000 bytes
    with pytest.raises(ApiError) as e:
        bounds.check_messages([Message("user", "x" * 500), Message("assistant", "y" * 501)])
    assert e.value.code == "context_length_exceeded" and "at least 101 tokens (1001 bytes of text)" in e.value.message
    with pytest.raises(ApiError):
        bounds.check_text("é" * 500 + "!")
    with pytest.raises(ApiError) as e:
        bounds.check_messages([Message("user", "")] * 101)
    assert "101 messages" in e.value.message


def test_a_queue_flood_gets_429_with_retry_after(served: RunningServer) -> None:
    base = served.url + "/v1"
    running = [Live(base, _chat(served, **LONG), key=f"r{i}") for i in range(2)]
    _wait(served, lambda s: s["busy"] == 2)
    waiting = Live(base, _chat(served, **LONG), key="w")
    _wait(served, lambda s: s["queued"] == 1)
    r = httpx.post(base + "/chat/completions", json=_chat(served, max_tokens=3), timeout=60)
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    assert r.json()["error"]["code"] == "rate_limit_exceeded"
    assert _slots(served)["queued"] == 1  # the refused one never queued
    for live in (*running, waiting):  # the clients go: their slots are freed, the waiting one gets one
        live.stop.set()
    _wait(served, lambda s: s["busy"] == 0 and s["queued"] == 0)
    for live in (*running, waiting):
        live.join()
    assert httpx.post(base + "/chat/completions", json=_chat(served, max_tokens=3), timeout=60).status_code == 200


def _half_open(url: str, n: int) -> list[socket.socket]:
    host, port = url.removeprefix("http://").split(":")
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        socks.append(s)
    return socks


def _closed_by_server(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        while s.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def test_connections_that_never_finish_their_headers_are_closed_and_starve_no_one(served: RunningServer) -> None:
    socks = _half_open(served.url, 40)  # more than the server's cap of 24
    try:
        assert httpx.get(served.url + "/health", timeout=5).status_code == 200  # the oldest made room
        assert all(_closed_by_server(s, within=5) for s in socks)  # the deadline (1 s) or the cap closed each
    finally:
        for s in socks:
            s.close()


def test_a_stream_whose_client_stops_reading_is_closed_and_its_slot_freed(served: RunningServer) -> None:
    before = _slots(served)["cancelled"]
    host, port = served.url.removeprefix("http://").split(":")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # a small window fills fast
    s.connect((host, int(port)))
    body = json.dumps(_chat(served, **LONG)).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    try:
        _wait(served, lambda snap: snap["busy"] == 1)
        snap = _wait(served, lambda snap: snap["busy"] == 0 and snap["cancelled"] > before, timeout=90)
        assert snap["cancelled"] == before + 1  # its slot is free; nothing else was cancelled
        assert _closed_by_server(s, within=10)  # and its connection dropped, buffered data and all
    finally:
        s.close()


def test_clients_with_different_keys_share_no_cached_prefix(served: RunningServer) -> None:
    base = served.url + "/v1"
    system = {"role": "system", "content": "You are a careful assistant who answers in one short sentence. " * 4}

    def ask(key: str, question: str) -> int:
        body = {"model": served.model_id, "max_tokens": 2,
                "messages": [system, {"role": "user", "content": question}]}
        r = httpx.post(base + "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        assert r.status_code == 200, r.text
        return r.json()["usage"]["prompt_tokens_details"]["cached_tokens"]

    assert ask("alice", "What is a cat?") == 0
    assert ask("alice", "What is a cat?") > 40  # her own conversation is reused
    assert ask("bob", "What is a cat?") == 0  # the same prompt from another client: nothing cached for him
    assert ask("alice", "What is a cat?") > 40  # and hers is still there
