"""TTFT and decode rate through remote engines, measured from the client, beside the local engine.

Starts llama-cpp-python's own server and `prefill serve` on 127.0.0.1 with the same model,
chats with each through prefill.remote.engine.RemoteEngine, and runs the local ChatEngine on
the same prompt. Prints one JSON object per backend (medians over --reps). Every backend keeps
its prompt cache between reps (llama-cpp-python's and Prefill's servers reuse the prefix), so TTFT
after the first rep is mostly the request's round trip. Then the same load on both servers, side by
side: 1, 2, 4 and 8 clients streaming at once (raw readers, `--load-requests` each), aggregate tok/s
and TTFT. llama-cpp-python's server decodes one request at a time and streams no `usage`: its
tokens are its chunks, and it stops at end-of-generation (it has no `ignore_eos`).

    python benchmarks/remote_bench.py [--model PATH] [--reps 3] [--threads 0] [--clients 1,2,4,8]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "app"))
sys.path.insert(0, str(ROOT))

from prefill.bench.serve_load import run_load  # noqa: E402
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings  # noqa: E402
from tests.llama_as_prefill import child_env  # noqa: E402 - children load models as Prefill does (no AMX trap)

PROMPT = "Write a short story about a lighthouse keeper."
GEN = 96
LOAD_TOKENS = 128
LOAD_KEYS = ("requests", "complete", "errors", "lost", "tokens", "total_tps", "ttft_p50_ms", "ttft_p95_ms")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    import httpx2

    end = time.monotonic() + 120
    while time.monotonic() < end and proc.poll() is None:
        try:
            if httpx2.get(url + "/v1/models", timeout=2).status_code < 500:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server at {url} did not start")


def _figures(name: str, runs: list[object]) -> dict[str, object]:
    from prefill.engine.events import MetricsSnapshot

    ms = [r for r in runs if isinstance(r, MetricsSnapshot)]
    med = lambda k: round(statistics.median(getattr(m, k) for m in ms), 2)  # noqa: E731
    return {"backend": name, "reps": len(ms), "ttft_ms": med("ttft_ms"), "decode_tps": med("decode_tps"),
            "itl_p50_ms": med("itl_p50_ms"), "prompt_tokens": ms[0].prompt_tokens,
            "completion_tokens": med("completion_tokens"), "kv_known": ms[0].kv_known}


def _run(engine: object, reps: int) -> list[object]:
    from prefill.engine.events import Finished
    from prefill.engine.message import Message
    from prefill.engine.settings import SamplingSettings

    sampling = SamplingSettings(temperature=0.0, max_tokens=GEN, seed=1)
    out = []
    for _ in range(reps):
        for ev in engine.stream(ChatRequest.of([Message("user", PROMPT)], sampling)):  # type: ignore[attr-defined]
            if isinstance(ev, Finished):
                out.append(ev.metrics)
    return out


def main() -> None:
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.hub.bundled import bundled_model_path
    from prefill.remote.engine import RemoteEngine

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, default=bundled_model_path())
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0: Prefill's automatic choice)")
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--load-requests", type=int, default=2)
    args = ap.parse_args()
    t = str(LoadSettings(n_threads=args.threads).threads)
    servers = {
        # As Prefill runs: the same threads for the prompt as for decoding, and a new request waits
        # its turn (by default llama-cpp-python's server cuts the running stream off for it).
        "llama-cpp-python server": [sys.executable, "-m", "llama_cpp.server", "--model", str(args.model),
                                    "--n_threads", t, "--n_threads_batch", t, "--interrupt_requests", "false",
                                    "--n_ctx", "2048", "--verbose", "false", "--host", "127.0.0.1"],
        "prefill serve": [sys.executable, "-m", "prefill", "serve", "--model", str(args.model), "--threads", t,
                          "--ctx", "2048", "--gpu-layers", "none", "--host", "127.0.0.1"],
    }
    for name, cmd in servers.items():
        port = _port()
        proc = subprocess.Popen([*cmd, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=child_env())
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_up(url, proc)
            engine = RemoteEngine(url)
            print(json.dumps(_figures(name, _run(engine, args.reps))), flush=True)
            model_id = engine.resolve_model()
            engine.close()
            for c in (int(x) for x in args.clients.split(",")):
                f = run_load(url + "/v1", model_id, c, 3600, LOAD_TOKENS, requests_per_client=args.load_requests,
                             raw=True, chunks_are_tokens=True).figures()
                print(json.dumps({"backend": name, "clients": c, **{k: f[k] for k in LOAD_KEYS}}), flush=True)
        finally:
            proc.terminate()
            proc.wait(30)
    local = ChatEngine.load(args.model, LoadSettings(n_ctx=2048, n_gpu_layers="none", n_threads=int(t)))
    print(json.dumps(_figures("local ChatEngine", _run(local, args.reps))), flush=True)
    local.close()


if __name__ == "__main__":
    main()
