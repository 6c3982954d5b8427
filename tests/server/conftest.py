"""`prefill serve` as a real process on 127.0.0.1 (a free port), and clients for it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from openai import OpenAI

from prefill.engine.settings import LoadSettings
from prefill.server.lifecycle import RunningServer, ServeOptions

START_S = 120


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str  # http://127.0.0.1:PORT
    model_id: str
    key: str = "none"
    stderr: list[str] = field(default_factory=list)  # what it said on stderr so far (a line per request)
    reader: threading.Thread | None = None
    out: queue.Queue[str] = field(default_factory=queue.Queue)  # what it printed on stdout after its first line

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def client(self, key: str | None = None, timeout: float = 60, **kw: object) -> OpenAI:
        return OpenAI(base_url=self.base, api_key=key or self.key, max_retries=0, timeout=timeout, **kw)

    def slots(self) -> dict[str, object]:
        headers = {"Authorization": f"Bearer {self.key}"}
        return httpx.get(self.url + "/slots", headers=headers, timeout=10).json()

    def wait_until(self, check: Callable[[dict[str, object]], bool], timeout: float = 30) -> dict[str, object]:
        """Poll /slots until `check` holds (the scheduler publishes every 0.1 s)."""
        end = time.monotonic() + timeout
        while True:
            snap = self.slots()
            if check(snap):
                return snap
            assert time.monotonic() < end, f"never reached: {snap}"
            time.sleep(0.05)


def start_server(model: Path | None, *args: str, env: dict[str, str] | None = None) -> Served:
    """`prefill serve --model MODEL` (None: no --model, as with --models-dir) with `args`, in `env` added to ours."""
    chosen = ["--model", str(model)] if model is not None else []
    cmd = [sys.executable, "-m", "prefill", "serve", *chosen, "--port", "0",
           "--gpu-layers", "none", "--threads", "1", *args]
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    said: list[str] = []  # stderr, read as it comes: a line per request never fills the pipe and stalls it
    reader = threading.Thread(target=lambda: said.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        line = lines.get(timeout=START_S)
    except queue.Empty:
        proc.kill()
        reader.join(10)
        raise AssertionError(f"the server did not start: {''.join(said)}") from None
    assert " at http://" in line, line
    url = line.split(" at ")[1].split()[0].removesuffix("/v1")
    key = args[args.index("--api-key") + 1] if "--api-key" in args else "none"
    return Served(proc, url, model.name.removesuffix(".gguf") if model is not None else "", key, said, reader, lines)


def stop_server(s: Served) -> str:
    """Interrupt it as Ctrl+C would; returns its stderr."""
    s.proc.send_signal(signal.SIGINT)
    try:
        s.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait()
    if s.reader is not None:
        s.reader.join(10)
    return "".join(s.stderr)


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """A stream of named SSE events (Anthropic's, the Responses API's) as (name, data) pairs."""
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines["event"], json.loads(lines["data"])))
    return out


@pytest.fixture(scope="module")
def tiny_served(tiny_model: Path) -> Iterator[RunningServer]:
    """The tiny model served in this process: one slot of 2,048 tokens, one thread."""
    options = ServeOptions(tiny_model, LoadSettings(n_ctx=2048, n_gpu_layers="none", n_threads=1), port=0,
                           parallel=1)
    server = RunningServer.open(options)
    server.start_thread()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(tiny_model: Path) -> Iterator[Served]:
    s = start_server(tiny_model, "--parallel", "2", "--ctx", "2048")
    yield s
    stop_server(s)
