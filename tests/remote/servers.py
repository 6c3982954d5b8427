"""llama-cpp-python's own OpenAI server as a real process on 127.0.0.1: a remote nobody here wrote."""

from __future__ import annotations

import queue
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.llama_as_prefill import child_env

START_S = 120
ALIAS = "smollm2"


@dataclass
class LlamaCppServer:
    proc: subprocess.Popen[str]
    url: str  # http://127.0.0.1:PORT, serving the model as ALIAS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_llama_cpp_server(model: Path) -> LlamaCppServer:
    """Start `python -m llama_cpp.server`; returns once uvicorn says it is listening."""
    port = _free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS,
           "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_ctx", "2048", "--verbose", "false"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=child_env(PYTHONUNBUFFERED="1"))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=START_S)
        except queue.Empty:
            proc.kill()
            raise AssertionError("llama_cpp.server did not start:\n" + "".join(seen[-20:])) from None
        seen.append(line)
        if "Uvicorn running on" in line:
            return LlamaCppServer(proc, f"http://127.0.0.1:{port}")
        if proc.poll() is not None:
            raise AssertionError("llama_cpp.server exited:\n" + "".join(seen[-20:]))


def stop_llama_cpp_server(s: LlamaCppServer) -> None:
    s.proc.send_signal(signal.SIGINT)
    try:
        s.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait()
