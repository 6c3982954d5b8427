"""`prefill serve` under load, against a lean batched loop, on SmolLM2 and on the tiny model.

For 1, 2, 4 and 8 clients (each sending --requests streamed requests of a fixed length),
the server's aggregate decode tok/s beside the lean loop's on the same sequences
(llama.cpp directly, in waves of min(clients, --parallel)); one client beside
`prefill bench`'s engine run (the chat engine, one sequence), run between the server's runs; then
the bounded load run (8 clients, --load-seconds, the openai client). Every side uses the same
llama.cpp threads (default: Prefill's automatic choice).
`cpu_ms_per_token` says what each side spent: the lean loop; the server; the clients, which
run on the same machine and, on a small one, take cores the lean loop has to itself.
Prints one JSON object per model. Rerun with:

    python benchmarks/serve_bench.py [--threads N] [--client raw|openai] [--load-seconds 60]

Goals: aggregate at 4 clients >= 0.9 x the lean loop; one client >= 0.95 x the engine.
"""

from __future__ import annotations

import argparse
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
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"
sys.path.insert(0, str(APP))

from prefill.bench.lean_batch import lean_batch_generate
from prefill.bench.runner import build_prompt, engine_run
from prefill.bench.serve_load import prompt_text, run_load
from prefill.bench.tiny_model import write_tiny_llama
from prefill.engine.batch_runtime import ServeSampling, load_batch_model
from prefill.engine.chat import ChatEngine
from prefill.engine.message import Message
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.hub.bundled import bundled_model_path
from prefill.server.prompt import PromptBuilder

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
        self.builder = PromptBuilder(self.loaded.runtime, self.loaded.header)
        self.sampling = ServeSampling(temperature=0.8, repeat_penalty=1.0, max_tokens=gen, seed=1, ignore_eos=True)
        self.cpu_ms_per_token = 0.0  # of the last run
        self.rate(1, 1)  # warm-up

    def rate(self, clients: int, requests: int) -> float:
        prompts = [self.builder.chat([Message("user", prompt_text(n))]) for n in range(1, clients * requests + 1)]
        wave = min(clients, self.parallel)
        cpu0 = time.process_time()
        tokens, wall = lean_batch_generate(self.loaded.runtime, prompts, self.sampling, wave=wave)
        self.cpu_ms_per_token = (time.process_time() - cpu0) * 1000 / tokens
        return tokens / wall

    def close(self) -> None:
        self.loaded.runtime.close()


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux's /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def run_model(args: argparse.Namespace, label: str, model: Path, gen: int) -> dict[str, object]:
    """Lean and server runs alternate, `--reps` times per concurrency; medians."""
    ctx = 512 + gen
    settings = LoadSettings(n_ctx=ctx, n_gpu_layers="all", n_threads=args.threads)
    engine = ChatEngine.load(model, settings)  # `prefill bench`'s engine run, between the server's runs
    engine_msgs = build_prompt(engine, 64)
    engine_sampling = SamplingSettings(temperature=0.8, repeat_penalty=1.0, seed=1, max_tokens=gen)
    engine_tps: list[float] = []
    lean = Lean(model, settings, args.parallel, gen)
    proc, url = start_server(args, model, ctx)
    model_id = model.name.removesuffix(".gguf")
    lean_tps: dict[int, list[float]] = {c: [] for c in CLIENTS}
    lean_cpu: dict[int, list[float]] = {c: [] for c in CLIENTS}
    served: dict[int, list[dict[str, object]]] = {c: [] for c in CLIENTS}
    try:
        run_load(url + "/v1", model_id, 1, 600, 8, requests_per_client=1)  # warm-up
        for _ in range(args.reps):
            engine_tps.append(engine_run(engine, engine_msgs, engine_sampling).decode_tps)
            for c in CLIENTS:
                lean_tps[c].append(lean.rate(c, args.requests))
                lean_cpu[c].append(lean.cpu_ms_per_token)
                served[c].append(served_run(url, model_id, c, gen, args.requests, proc.pid, args.client == "raw"))
        load = None
        if args.load_seconds and label in args.load_on:
            load = run_load(url + "/v1", model_id, 8, args.load_seconds, args.load_tokens).figures()
    finally:
        lean.close()
        engine.close()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)

    def med(c: int, key: str) -> float:
        return float(statistics.median(float(f[key]) for f in served[c]))  # type: ignore[arg-type]

    server_tps = {c: round(med(c, "total_tps"), 1) for c in CLIENTS}
    lean_med = {c: round(statistics.median(lean_tps[c]), 1) for c in CLIENTS}
    one = CLIENTS[0]
    engine_med = statistics.median(engine_tps)
    return {
        "label": label, "model": model.name, "threads": settings.threads, "parallel": args.parallel,
        "client": args.client,
        "gen_tokens": gen, "requests_per_client": args.requests, "reps": args.reps,
        "aggregate_tps": {"server": server_tps, "lean": lean_med},
        "ratio_server_over_lean": {c: round(server_tps[c] / lean_med[c], 3) for c in CLIENTS},
        "runs": {"server": {c: [f["total_tps"] for f in served[c]] for c in CLIENTS},
                 "lean": {c: [round(x, 1) for x in lean_tps[c]] for c in CLIENTS}},
        f"clients_{one}_vs_engine": {
            "engine_decode_tps": round(engine_med, 1),
            "engine_runs": [round(x, 1) for x in engine_tps],
            "server_decode_tps": med(one, "server_decode_tps_p50"),
            "client_decode_tps": med(one, "client_decode_tps_p50"),
            "ratio_server": round(med(one, "server_decode_tps_p50") / engine_med, 3),
            "ratio_client": round(med(one, "client_decode_tps_p50") / engine_med, 3),
        },
        "ttft_ms_p50_p95": {c: [med(c, "ttft_p50_ms"), med(c, "ttft_p95_ms")] for c in CLIENTS},
        "cpu_ms_per_token": {"lean": {c: round(statistics.median(lean_cpu[c]), 3) for c in CLIENTS},
                             "clients": {c: med(c, "client_cpu_ms_per_token") for c in CLIENTS},
                             "server": {c: med(c, "server_cpu_ms_per_token") for c in CLIENTS}},
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
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0,
                    help="llama.cpp threads, the same on every side (default 0: Prefill's automatic choice)")
    ap.add_argument("--client", choices=("raw", "openai"), default="raw",
                    help="the comparison runs' clients: raw http.client readers (default; least CPU taken from "
                         "the server's cores) or the openai client. The load run always uses the openai client.")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--requests", type=int, default=3, help="requests per client at each concurrency")
    ap.add_argument("--reps", type=int, default=3, help="alternating lean/server runs (and engine runs)")
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
