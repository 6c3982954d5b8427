"""The server's fault battery: a real `prefill serve` attacked as a web page and a greedy client
would, while one client streams an answer. Prints one JSON line per attack (what the attacker got),
the live stream's decode rate during the attacks ÷ without them (goal ≥ 0.8), and the server's
peak memory above idle while it refuses oversized prompts (goal < +50 MB).

    PYTHONPATH=app:. python benchmarks/fault_battery_server.py [--model PATH] [--reps 3]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx2 as httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "app")]

from prefill.hub.bundled import bundled_model_path  # noqa: E402

LIVE_TOKENS = 400


class Server:
    def __init__(self, model: Path, *args: str):
        cmd = [sys.executable, "-m", "prefill", "serve", "--model", str(model), "--port", "0",
               "--gpu-layers", "none", "--threads", "1", *args]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "app"), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert " at http://" in line, line + self.proc.stderr.read()  # type: ignore[union-attr]
        self.url = line.split(" at ")[1].split()[0].removesuffix("/v1")
        self.base = self.url + "/v1"
        self.model_id = model.name.removesuffix(".gguf")
        self.host, port = self.url.removeprefix("http://").split(":")
        self.port = int(port)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def chat(self, **fields: object) -> dict[str, object]:
        return {"model": self.model_id, "messages": [{"role": "user", "content": "Tell me about the sea."}], **fields}

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return err


def live_rate(server: Server) -> float:
    """Decode tokens a second of one streamed answer, from its first token to its last."""
    body = server.chat(max_tokens=LIVE_TOKENS, ignore_eos=True, stream=True, stream_options={"include_usage": True})
    first = last = 0.0
    tokens = 0
    with httpx.stream("POST", server.base + "/chat/completions", json=body, timeout=300) as r:
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            elif chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                last = time.perf_counter()
                first = first or last
    return (tokens - 1) / (last - first)


def post(server: Server, body: bytes, content_type: str = "application/json", **headers: str) -> int:
    return httpx.post(server.base + "/chat/completions", content=body, timeout=60,
                      headers={"Content-Type": content_type, **headers}).status_code


def half_open(server: Server, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.create_connection((server.host, server.port))
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        socks.append(s)
    return socks


def attacks(server: Server) -> dict[str, Callable[[], object]]:
    chat = json.dumps(server.chat(max_tokens=8)).encode()
    n_ctx = httpx.get(server.base + "/models").json()["data"][0]["meta"]["n_ctx_seq"]

    def flood() -> list[int]:  # more requests than slots and queue: some must be told to come back
        out: list[int] = []
        body = server.chat(max_tokens=32)
        threads = [threading.Thread(target=lambda: out.append(
            httpx.post(server.base + "/chat/completions", json=body, timeout=120).status_code)) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sorted(set(out))

    def idle_connections() -> object:
        socks = half_open(server, 300)
        t0 = time.perf_counter()
        status = httpx.get(server.url + "/health", timeout=30).status_code
        took = time.perf_counter() - t0
        for s in socks:
            s.close()
        return {"health": status, "health_ms": round(took * 1000, 1)}

    def half_sent_bodies() -> object:  # 515 requests that promise 50,000 bytes of body and send one
        socks, refused = [], 0
        for _ in range(515):  # each waits for its "100 Continue": the server is reading its body
            s = socket.create_connection((server.host, server.port), timeout=30)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Expect: 100-continue\r\nContent-Length: 50000\r\n\r\n")
            if s.recv(1024).startswith(b"HTTP/1.1 100 "):
                s.sendall(b"{")
            else:
                refused += 1
            socks.append(s)
        t0 = time.perf_counter()
        status = httpx.get(server.url + "/health", timeout=30).status_code
        took = time.perf_counter() - t0
        timeouts = answers = 0
        for s in socks:  # until the server closes each (its body's deadline, or room for another), or 60 s
            s.settimeout(max(0.001, t0 + 60 - time.perf_counter()))
            try:
                got = b""
                while chunk := s.recv(65536):
                    got += chunk
                answers += got.startswith(b"HTTP/1.1 408 ")
            except ConnectionResetError:
                pass
            except TimeoutError:
                timeouts += 1
            s.close()
        return {"refused": refused, "health": status, "health_ms": round(took * 1000, 1), "answered_408": answers,
                "still_open_after_60s": timeouts, "all_closed_after_s": None if timeouts else
                round(time.perf_counter() - t0, 1)}

    def stops_reading() -> object:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        s.connect((server.host, server.port))
        body = json.dumps(server.chat(max_tokens=100_000, ignore_eos=True, stream=True)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        time.sleep(30)  # the server's write deadline is 15 s
        s.settimeout(5)
        try:
            while s.recv(65536):
                pass
            closed = True
        except (ConnectionResetError, TimeoutError) as e:
            closed = isinstance(e, ConnectionResetError)
        s.close()
        return {"closed_by_server": closed}

    return {
        "foreign_host": lambda: httpx.get(server.base + "/models", headers={"Host": "attacker.example"}).status_code,
        "foreign_origin": lambda: post(server, chat, Origin="http://evil.example"),
        "simple_post": lambda: post(server, chat, "text/plain"),
        "oversized_8mib": lambda: post(server, b'{"pad": "' + b"a" * (8 * 2**20) + b'"}'),
        "deep_nesting": lambda: post(server, b"[" * 60_000 + b"]" * 60_000),
        "huge_number": lambda: post(server, b'{"model": ' + b"9" * 60_000 + b"}"),
        "messages_180k": lambda: post(server, json.dumps({"model": server.model_id, "messages": [
            {"role": "user", "content": "hi"}] * 180_000}).encode()),
        "messages_over_context": lambda: post(server, json.dumps({"model": server.model_id, "messages": [
            {"role": "user", "content": ""}] * (n_ctx + 1)}).encode()),
        "idle_connections_300": idle_connections,
        "half_sent_bodies_515": half_sent_bodies,
        "queue_flood_40": flood,
        # a 247-byte body whose pattern llama.cpp would take minutes a token to follow: refused at the door
        "costly_pattern": lambda: post(server, json.dumps(server.chat(max_tokens=50, response_format={
            "type": "json_schema", "json_schema": {"name": "a", "schema": {
                "type": "string", "pattern": "^((a?){20}){20}$"}}})).encode()),
        "client_stops_reading": stops_reading,
    }


def memory_while_refusing(server: Server) -> dict[str, float]:
    """Peak RSS above idle while 8 MiB prompts (two at once, as in the report) are refused."""
    idle = server.rss_mb()
    peak = idle
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, server.rss_mb())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    words = "word " * (8 * 2**20 // 5)
    prompt = json.dumps({"model": server.model_id, "messages": [{"role": "user", "content": words}]})
    statuses = []
    for _ in range(3):
        pair = [threading.Thread(target=lambda: statuses.append(post(server, prompt.encode()))) for _ in range(2)]
        for t in pair:
            t.start()
        for t in pair:
            t.join()
    done.set()
    sampler.join()
    return {"idle_mb": round(idle, 1), "peak_mb": round(peak, 1), "above_idle_mb": round(peak - idle, 1),
            "statuses": sorted(set(statuses))}


def scan_bomb_jpeg(side: int = 6000, repeats: int = 2000) -> bytes:
    """A progressive JPEG whose last scan is repeated: libjpeg runs every scan over the whole picture."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (side, side), (120, 60, 200)).save(out, "JPEG", progressive=True, quality=80)
    data = out.getvalue()
    last, end = data.rindex(b"\xff\xda"), data.rindex(b"\xff\xd9")
    return data[:end] + data[last:end] * repeats + data[end:]


def jpeg_scan_bomb() -> dict[str, object]:
    """Two requests, each a 36 MP progressive JPEG of 2,000 scans, to a server with a (tiny) projector,
    while a text-only client asks for an answer: seconds to each refusal, the text answer's seconds,
    and the server's peak memory above idle."""
    from prefill.bench.tiny_vision import write_tiny_vision

    with tempfile.TemporaryDirectory() as tmp:
        model, _mmproj = write_tiny_vision(Path(tmp))
        server = Server(model, "--parallel", "2", "--ctx", "1024")
        try:
            url = "data:image/jpeg;base64," + base64.b64encode(scan_bomb_jpeg()).decode()
            bomb = json.dumps({"model": server.model_id, "max_tokens": 2, "messages": [{"role": "user", "content": [
                {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": url}}]}]}).encode()
            idle = peak = server.rss_mb()
            statuses: list[int] = []
            seconds: list[float] = []

            def one() -> None:
                t0 = time.perf_counter()
                statuses.append(post(server, bomb))
                seconds.append(round(time.perf_counter() - t0, 2))

            bombs = [threading.Thread(target=one) for _ in range(2)]
            for t in bombs:
                t.start()
            time.sleep(0.3)  # both bombs are in
            t0 = time.perf_counter()
            text = post(server, json.dumps(server.chat(max_tokens=2)).encode())
            text_s = round(time.perf_counter() - t0, 2)
            while any(t.is_alive() for t in bombs):
                peak = max(peak, server.rss_mb())
                time.sleep(0.01)
        finally:
            server.stop()
    return {"bomb_statuses": sorted(set(statuses)), "bomb_seconds": sorted(seconds), "text_status": text,
            "text_seconds": text_s, "above_idle_mb": round(peak - idle, 1)}


def trickle_fetches(n: int = 20, every_s: float = 0.5) -> dict[str, object]:
    """A remote image whose body comes a byte every `every_s` seconds: one fetch whose client waits (the
    seconds until it is cut), and `n` whose clients leave after 1 s, mid-fetch (the seconds until the trickler saw
    every connection closed, and this process's memory above idle). Run in this process against a
    trickler on loopback, which a served prefill refuses to fetch from (as it should)."""
    import anyio

    from prefill.engine.message import Message
    from prefill.server.errors import ApiError
    from prefill.server.images import ImageRef, attach_images

    listener = socket.create_server(("127.0.0.1", 0), backlog=n + 4)
    closed: list[float] = []
    accepted: list[float] = []  # a client that leaves before its fetch connects never reaches the trickler

    def trickle(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 100000\r\n\r\n")
            for _ in range(100_000):
                time.sleep(every_s)
                try:
                    conn.sendall(b"\x89")
                except OSError:
                    closed.append(time.perf_counter())
                    return

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(time.perf_counter())
            threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    ref = ImageRef(0, 1, f"http://127.0.0.1:{listener.getsockname()[1]}/slow.png")
    msgs = [Message("user", "look")]

    async def fetch(leave_after_s: float | None) -> str:
        async def receive() -> dict[str, object]:
            await anyio.sleep(leave_after_s if leave_after_s is not None else 3600)
            return {"type": "http.disconnect"}
        try:
            await attach_images(msgs, [ref], True, True, True, receive=receive)
        except ApiError as e:
            return f"{e.status} {e.message[:60]}"
        return "fetched"

    async def many() -> list[str]:
        got: list[str] = []

        async def one() -> None:
            got.append(await fetch(1.0))  # connected by then (the HTTP client is made first), then gone

        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
        return got

    def rss_mb() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    t0 = time.perf_counter()
    alone = anyio.run(fetch, None)
    alone_s = round(time.perf_counter() - t0, 2)
    idle = rss_mb()
    closed.clear()
    accepted.clear()
    t0 = time.perf_counter()
    left = anyio.run(many)  # every fetch has ended here: no connection comes after
    deadline = time.perf_counter() + 120
    while len(closed) < len(accepted) and time.perf_counter() < deadline:
        time.sleep(every_s / 5)
    listener.close()
    return {"waiting_client": alone, "waiting_client_seconds": alone_s, "left_clients": sorted(set(left)),
            "connected": len(accepted), "all_closed_after_s":
            round(max(closed, default=t0) - t0, 2) if len(closed) >= len(accepted) else None,
            "above_idle_mb": round(rss_mb() - idle, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=bundled_model_path())
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--skip", action="append", default=[], help="an attack to leave out (repeatable)")
    ap.add_argument("--parallel", type=int, default=2, help="the server's slots (default 2)")
    args = ap.parse_args()
    server = Server(args.model, "--parallel", str(args.parallel), "--ctx", "4096")
    try:
        live_rate(server)  # warm
        cases = {k: v for k, v in attacks(server).items() if k not in args.skip}
        slow = cases.pop("client_stops_reading", lambda: "skipped")
        saw: dict[str, object] = {}
        stalled = threading.Thread(target=lambda: saw.update(client_stops_reading=slow()))
        stalled.start()  # for the first rep: it holds the other slot until the write deadline
        alone, attacked = [], []
        for _ in range(args.reps):
            alone.append(live_rate(server))
            stop = threading.Event()

            def attack_all(stop: threading.Event = stop) -> None:
                while not stop.is_set():
                    for name, attack in cases.items():
                        if stop.is_set():
                            return
                        t0 = time.perf_counter()
                        saw[name] = {"got": attack(), "seconds": round(time.perf_counter() - t0, 2)}

            attacker = threading.Thread(target=attack_all)
            attacker.start()
            time.sleep(0.3)
            attacked.append(live_rate(server))
            stop.set()
            attacker.join()
        stalled.join()
        for name, record in saw.items():
            print(json.dumps({"attack": name, "saw": record}), flush=True)
        ratio = statistics.median(attacked) / statistics.median(alone)
        print(json.dumps({"live_tok_s_alone": [round(r, 1) for r in alone],
                          "live_tok_s_attacked": [round(r, 1) for r in attacked],
                          "ratio": round(ratio, 3), "goal": 0.8}), flush=True)
        print(json.dumps({"memory_refusing_8mib_prompts": memory_while_refusing(server), "goal_mb": 50}), flush=True)
        for name, images_attack in (("jpeg_scan_bomb", jpeg_scan_bomb), ("trickle_fetch", trickle_fetches)):
            if name not in args.skip:
                print(json.dumps({"attack": name, "saw": images_attack()}), flush=True)
    finally:
        err = server.stop()
    tracebacks = err.count("Traceback")
    print(json.dumps({"server_log_tracebacks": tracebacks, "server_log_tail": err[-400:]}), flush=True)
    return 0 if tracebacks == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
