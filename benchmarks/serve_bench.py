"""`prefill serve` under load, against a lean batched loop, on SmolLM2 and on the tiny model.

For 1, 2, 4 and 8 clients (each sending --requests streamed requests of a fixed length),
the server's aggregate decode tok/s beside the lean loop's on the same sequences
(llama.cpp directly, in waves of min(clients, --parallel)); one client beside
`prefill bench`'s engine run (the chat engine, one sequence); then the bounded load run
(8 clients, --load-seconds, the openai client). Every side uses the same llama.cpp threads
(default: Prefill's automatic choice).
`cpu_ms_per_token` says what each side spent: the lean loop; the server; the clients, which
run on the same machine and, on a small one, take cores the lean loop has to itself.
Runs are compared in ABBA pairs and the headline ratios are medians of the pairs' ratios: this
box's speed swings up to 2x within seconds, which a ratio of medians over runs minutes apart
does not survive. Prints one JSON object per model. Rerun with:

    python benchmarks/serve_bench.py [--threads N] [--client raw|openai] [--load-seconds 60]
    python benchmarks/serve_bench.py --dialect [dialect_bench.py's options]

`--dialect` runs dialect_bench.py instead: each dialect's cost per token (Messages, Responses, Ollama's
/api/chat) against Chat Completions on the same requests.

Goals: aggregate at 4 clients >= 0.9 x the lean loop; one client >= 0.95 x the engine.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"
sys.path.insert(0, str(APP))

from prefill.bench.lean_batch import lean_batch_generate
from prefill.bench.serve_load import process_cpu_s, prompt_text, run_load
from prefill.bench.side_by_side import build_prompt, engine_run
from prefill.bench.tiny_model import write_tiny_llama
from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.prompt.model_chat import ModelChat
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings, ServeSampling
from prefill.hub.bundled import bundled_model_path

CLIENTS = [1, 2, 4, 8]


def no_extra_buffers() -> None:
    """Load weights without llama.cpp's extra buffer types (AMX, repacked): on hosts where those
    kernels trap (SIGILL), the only way to run a quantised model. Both sides of a comparison get it."""
    import llama_cpp

    default = llama_cpp.llama_model_default_params

    def params():  # type: ignore[no-untyped-def]
        p = default()
        p.use_extra_bufts = False
        return p

    llama_cpp.llama_model_default_params = params


def start_server(args: argparse.Namespace, model: Path, ctx: int) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, __file__, "--serve-child", *(["--no-extra-bufts"] if args.no_extra_bufts else []),
           "serve", "--model", str(model), "--port", "0", "--parallel", str(args.parallel), "--ctx", str(ctx),
           "--threads", str(args.threads), "--gpu-layers", "all"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    line = lines.get(timeout=300)
    return proc, line.split(" at ")[1].split()[0].removesuffix("/v1")


class Lean:
    """The lean batched loop on its own copy of the model, with the server's prompts."""

    def __init__(self, model: Path, settings: LoadSettings, parallel: int, gen: int):
        self.loaded = load_batch_model(model, settings, parallel)
        self.parallel = parallel
        self.chat = ModelChat(self.loaded.header.chat_template, self.loaded.runtime)
        self.sampling = ServeSampling(temperature=0.8, repeat_penalty=1.0, max_tokens=gen, seed=1, ignore_eos=True)
        self.cpu_ms_per_token = 0.0  # of the last run
        self.rate(1, 1)  # warm-up

    def rate(self, clients: int, requests: int) -> float:
        asks = [ChatRequest((Message("user", prompt_text(n)),)) for n in range(1, clients * requests + 1)]
        prompts = [self.chat.prompt(ask)[1] for ask in asks]
        wave = min(clients, self.parallel)
        cpu0 = time.process_time()
        tokens, wall = lean_batch_generate(self.loaded.runtime, prompts, self.sampling, wave=wave)
        self.cpu_ms_per_token = (time.process_time() - cpu0) * 1000 / tokens
        return tokens / wall

    def close(self) -> None:
        self.loaded.runtime.close()


def served_run(url: str, model_id: str, clients: int, gen: int, requests: int, server_pid: int,
               raw: bool) -> dict[str, object]:
    """One server run's figures, with the CPU the clients (this process) and the server spent per token:
    on a small machine they share the cores the lean loop has to itself."""
    cpu0, srv0 = time.process_time(), process_cpu_s(server_pid)
    f = run_load(url + "/v1", model_id, clients, 3600, gen, requests_per_client=requests, raw=raw).figures()
    tokens = max(1, int(f["tokens"]))  # type: ignore[call-overload]
    f["client_cpu_ms_per_token"] = round((time.process_time() - cpu0) * 1000 / tokens, 3)
    f["server_cpu_ms_per_token"] = round((process_cpu_s(server_pid) - srv0) * 1000 / tokens, 3)
    return f


def paired(first: Callable[[], float], second: Callable[[], float], n: int) -> list[tuple[float, float]]:
    """`n` pairs of runs, first then second, the order swapped every pair (ABBA): this box's speed
    swings up to 2x within seconds, so each figure is compared with its neighbour, not with a median."""
    pairs = []
    for i in range(n):
        if i % 2 == 0:
            a = first()
            b = second()
        else:
            b = second()
            a = first()
        pairs.append((a, b))
    return pairs


def pair_ratios(pairs: list[tuple[float, float]]) -> list[float]:
    """Each pair's second / first (0 for a pair whose first run served nothing)."""
    return [b / a if a else 0.0 for a, b in pairs]


def ratios(pairs: list[tuple[float, float]]) -> dict[str, object]:
    """The median of the pairs' ratios (second / first), the headline figure, with the medians of each side."""
    return {
        "median_pair_ratio": round(statistics.median(pair_ratios(pairs)), 3),
        "medians": [round(statistics.median(a for a, _ in pairs), 1), round(statistics.median(b for _, b in pairs), 1)],
        "ratio_of_medians": round(statistics.median(b for _, b in pairs) / statistics.median(a for a, _ in pairs), 3),
    }


def run_model(args: argparse.Namespace, label: str, model: Path, gen: int) -> dict[str, object]:
    """For each concurrency, `--reps` lean and server runs in ABBA pairs; for one client, `--pairs` engine
    runs paired with one-request server runs."""
    ctx = 512 + gen
    settings = LoadSettings(n_ctx=ctx, n_gpu_layers="all", n_threads=args.threads)
    engine = ChatEngine.load(model, settings)  # `prefill bench`'s engine run
    engine_msgs = build_prompt(engine, 64)
    engine_sampling = SamplingSettings(temperature=0.8, repeat_penalty=1.0, seed=1, max_tokens=gen)
    lean = Lean(model, settings, args.parallel, gen)
    proc, url = start_server(args, model, ctx)
    model_id = model.name.removesuffix(".gguf")
    raw = args.client == "raw"
    lean_cpu: dict[int, list[float]] = {c: [] for c in CLIENTS}
    served: dict[int, list[dict[str, object]]] = {c: [] for c in CLIENTS}
    pairs: dict[int, list[tuple[float, float]]] = {}
    one_served: list[dict[str, object]] = []

    def lean_run(c: int) -> float:
        tps = lean.rate(c, args.requests)
        lean_cpu[c].append(lean.cpu_ms_per_token)
        return tps

    def server_run(c: int) -> float:
        f = served_run(url, model_id, c, gen, args.requests, proc.pid, raw)
        served[c].append(f)
        return float(f["total_tps"])  # type: ignore[arg-type]

    def one_request() -> float:
        f = served_run(url, model_id, 1, gen, 1, proc.pid, raw)
        one_served.append(f)
        return float(f["server_decode_tps_p50"])  # type: ignore[arg-type]

    try:
        run_load(url + "/v1", model_id, 1, 600, 8, requests_per_client=1)  # warm-up
        for c in CLIENTS:
            pairs[c] = paired(functools.partial(lean_run, c), functools.partial(server_run, c), args.reps)
        engine_pairs = paired(lambda: engine_run(engine, engine_msgs, engine_sampling).decode_tps, one_request,
                              args.pairs)
        load = None
        if args.load_seconds and label in args.load_on:
            load = run_load(url + "/v1", model_id, 8, args.load_seconds, args.load_tokens).figures()
    finally:
        lean.close()
        engine.close()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)

    def med(runs: list[dict[str, object]], key: str) -> float:
        return float(statistics.median(float(f[key]) for f in runs))  # type: ignore[arg-type]

    vs_lean = {c: ratios(pairs[c]) for c in CLIENTS}
    vs_engine = ratios(engine_pairs)
    return {
        "label": label, "model": model.name, "threads": settings.threads, "parallel": args.parallel,
        "client": args.client, "gen_tokens": gen, "requests_per_client": args.requests, "reps": args.reps,
        "server_over_lean": {c: vs_lean[c]["median_pair_ratio"] for c in CLIENTS},
        "one_client_over_engine": vs_engine["median_pair_ratio"],
        "aggregate_tps": {"server": {c: vs_lean[c]["medians"][1] for c in CLIENTS},  # type: ignore[index]
                          "lean": {c: vs_lean[c]["medians"][0] for c in CLIENTS}},  # type: ignore[index]
        "vs_lean": vs_lean,
        "runs": {"server": {c: [round(b, 1) for _, b in pairs[c]] for c in CLIENTS},
                 "lean": {c: [round(a, 1) for a, _ in pairs[c]] for c in CLIENTS}},
        "one_client_vs_engine": {
            **vs_engine, "pairs": len(engine_pairs),
            "engine_runs": [round(a, 1) for a, _ in engine_pairs],
            "server_runs": [round(b, 1) for _, b in engine_pairs],
            "client_decode_tps": med(one_served, "client_decode_tps_p50"),
        },
        "ttft_ms_p50_p95": {c: [med(served[c], "ttft_p50_ms"), med(served[c], "ttft_p95_ms")] for c in CLIENTS},
        "cpu_ms_per_token": {"lean": {c: round(statistics.median(lean_cpu[c]), 3) for c in CLIENTS},
                             "clients": {c: med(served[c], "client_cpu_ms_per_token") for c in CLIENTS},
                             "server": {c: med(served[c], "server_cpu_ms_per_token") for c in CLIENTS}},
        "errors": sum(int(f["errors"]) for c in CLIENTS for f in served[c]),  # type: ignore[call-overload]
        "load": load,
    }


def main() -> int:
    if "--serve-child" in sys.argv:  # the server process of a run
        argv = [a for a in sys.argv[1:] if a not in ("--serve-child", "--no-extra-bufts")]
        if "--no-extra-bufts" in sys.argv:
            no_extra_buffers()
        from prefill.cli import main as cli_main

        return cli_main(argv)
    if "--dialect" in sys.argv:  # each dialect's cost per token: dialect_bench.py, with the other options
        sys.argv.remove("--dialect")
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from dialect_bench import main as dialect_main

        return dialect_main()
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0,
                    help="llama.cpp threads, the same on every side (default 0: Prefill's automatic choice)")
    ap.add_argument("--client", choices=("raw", "openai"), default="raw",
                    help="the comparison runs' clients: raw http.client readers (default; least CPU taken from "
                         "the server's cores) or the openai client. The load run always uses the openai client.")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--requests", type=int, default=3, help="requests per client at each concurrency")
    ap.add_argument("--reps", type=int, default=5, help="lean/server run pairs at each concurrency")
    ap.add_argument("--pairs", type=int, default=20, help="engine/one-request server run pairs")
    ap.add_argument("--load-seconds", type=float, default=60)
    ap.add_argument("--load-tokens", type=int, default=64)
    ap.add_argument("--load-on", default="tiny", help="models for the load run (comma-separated labels)")
    ap.add_argument("--models", default="smollm2,tiny")
    ap.add_argument("--clients", default="1,2,4,8", help="concurrencies to measure (comma-separated)")
    ap.add_argument("--no-extra-bufts", action="store_true",
                    help="no AMX/repacked weights (hosts where llama.cpp's AMX kernels raise SIGILL)")
    args = ap.parse_args()
    args.load_on = args.load_on.split(",")
    CLIENTS[:] = [int(c) for c in args.clients.split(",")]
    if args.no_extra_bufts:
        no_extra_buffers()
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        smol = bundled_model_path()
        if "smollm2" in args.models and smol is not None:
            runs.append(("smollm2", smol, 128))
        if "tiny" in args.models:
            runs.append(("tiny", write_tiny_llama(Path(tmp) / "tiny.gguf"), 256))
        for label, model, gen in runs:
            print(json.dumps(run_model(args, label, model, gen)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
