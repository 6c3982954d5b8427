"""`prefill serve --speculative ngram` against `--speculative off`: 4 clients at once, greedy.

Two servers on the same model (SmolLM2 by default, flash attention on for both, as speculation
needs it) differ only in --speculative. Each run, every client sends --requests chat requests one
after another (temperature 0, repeat penalty 1, non-streamed); the aggregate rate is completion
tokens over the run's wall time. Two tasks: "copy" (repeat a passage from the prompt: drafts from
the text itself should mostly be taken) and "free" (nothing to copy: speculation should cost
little). Runs alternate in ABBA pairs (this machine's speed swings within seconds) and the headline
is the median of the pairs' ratios (ngram / off). A third task, "passage" (not run by default), is the
chat engine's copy task (`speculative_bench.py`: ~375 tokens copied), for the server's figure beside
the chat's: `--clients 1 --tasks passage --max-tokens 450`. Every answer's text is compared between the two
servers (`identical_text`), and each server's with its own earlier runs (`repeatable_text`: with
several slots, even the plain server's answer to a prompt was seen to change with the slot's cache
history, a near tie flipped, likely by the order attention sums a sequence's cells in). Prints one
JSON object. Rerun with:

    python benchmarks/serve_speculative_bench.py [--clients 4] [--pairs 4] [--threads N] [--tasks copy,free]

The figure issue 20 asks for: 4 clients with n-gram drafts on a copy task, aggregate tok/s / without
(on a 2-core CPU at one thread, 0.90-0.98 before the server judged its drafts by the rates its steps
realise: engine/drafts/step_rates.py). `--breakdown` runs the same requests on the scheduler in this
process instead (no HTTP), once without drafts and once with, and prints where a step's time goes
(`StepRates.report`: the batch built, the drafts looked up, the events handed out, llama_decode, the
tokens taken), for plain and drafted steps.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

APP = Path(__file__).resolve().parents[1] / "app"
sys.path.insert(0, str(APP))

from prefill.bench.copy_passage import COPY
from prefill.hub.bundled import bundled_model_path

PASSAGES = (
    "The river town woke slowly that spring. Fishermen mended their nets along the stone quay while the baker "
    "set out loaves still warm from the oven. Children ran between the market stalls, chasing a dog that had "
    "stolen a string of sausages, and the old ferryman watched them with a patient smile. By noon the fog had "
    "lifted from the water, revealing the hills beyond, green with new grass and dotted with sheep.",
    "def load(path):\n    with open(path) as f:\n        return [line.strip() for line in f if line.strip()]\n\n\n"
    "def count_words(lines):\n    counts = {}\n    for line in lines:\n        for word in line.split():\n"
    "            counts[word] = counts.get(word, 0) + 1\n    return counts\n\n\n"
    "if __name__ == '__main__':\n    print(count_words(load('notes.txt')))\n",
    "Dear Ms. Patel, thank you for your letter of the fourth of March. The parcel you sent arrived safely on "
    "Tuesday, and the books inside were in excellent condition. We will send payment by the end of the month, "
    "as agreed, and look forward to working with you again next year. With kind regards, Thomas Reed.",
    "Step one: unplug the printer and wait ten seconds. Step two: open the front cover and remove the toner "
    "cartridge. Step three: gently pull out any jammed paper, keeping both hands level. Step four: put the "
    "cartridge back, close the cover, plug the printer in and print a test page.",
)
FREE = (
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a refrigerator keeps food cold, for a ten-year-old.",
    "List some ideas for a rainy weekend with friends, and say why each is fun.",
    "Describe a walk through a busy city market in the early morning.",
)


def start_server(args: argparse.Namespace, model: Path, mode: str) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "prefill", "serve", "--model", str(model), "--port", "0", "--parallel",
           str(args.clients), "--ctx", "1024", "--gpu-layers", "none", "--flash-attn", "--speculative", mode,
           *(["--threads", str(args.threads)] if args.threads else [])]
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(APP))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    line = lines.get(timeout=300)
    return proc, line.split(" at ")[1].split()[0].removesuffix("/v1") + "#" + model.name.removesuffix(".gguf")


def ask(url: str, content: str, max_tokens: int) -> dict[str, object]:
    """One greedy chat request (`url` names the server and, after '#', its model id)."""
    url, model_id = url.split("#")
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
    body = json.dumps({"model": model_id, "messages": [{"role": "user", "content": content}], "temperature": 0,
                       "max_tokens": max_tokens})
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    reply = json.loads(conn.getresponse().read())
    conn.close()
    return reply  # type: ignore[no-any-return]


def run(url: str, prompts: list[str], requests: int, max_tokens: int) -> tuple[float, list[str], int, int]:
    """Every client sends its requests in turn; returns (aggregate tok/s, texts, drafted, accepted)."""
    texts: list[list[str]] = [[] for _ in prompts]
    figures: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        for _ in range(requests):
            reply = ask(url, prompts[i], max_tokens)
            t = reply["timings"]  # type: ignore[index]
            with lock:
                figures.append((int(reply["usage"]["completion_tokens"]),  # type: ignore[index]
                                int(t.get("draft_n", 0)), int(t.get("draft_n_accepted", 0))))
            texts[i].append(reply["choices"][0]["message"]["content"])  # type: ignore[index]

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(prompts))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    tokens = sum(f[0] for f in figures)
    return tokens / wall, [x for xs in texts for x in xs], sum(f[1] for f in figures), sum(f[2] for f in figures)


def compare(off_url: str, on_url: str, prompts: list[str], args: argparse.Namespace) -> dict[str, object]:
    pairs: list[tuple[float, float]] = []
    same = True
    first: dict[bool, list[str]] = {}
    repeatable = {False: True, True: True}
    drafted = accepted = 0
    for i in range(args.pairs):
        order = [(off_url, False), (on_url, True)] if i % 2 == 0 else [(on_url, True), (off_url, False)]
        got: dict[bool, tuple[float, list[str], int, int]] = {}
        for url, on in order:
            got[on] = run(url, prompts, args.requests, args.max_tokens)
        same &= got[True][1] == got[False][1]
        for on in (False, True):
            repeatable[on] &= first.setdefault(on, got[on][1]) == got[on][1]
        drafted += got[True][2]
        accepted += got[True][3]
        pairs.append((got[False][0], got[True][0]))
    return {
        "ngram_over_off": round(statistics.median(b / a for a, b in pairs), 3),
        "aggregate_tps": {"off": round(statistics.median(a for a, _ in pairs), 1),
                          "ngram": round(statistics.median(b for _, b in pairs), 1)},
        "runs": {"off": [round(a, 1) for a, _ in pairs], "ngram": [round(b, 1) for _, b in pairs]},
        "draft_n": drafted, "draft_n_accepted": accepted,
        "acceptance": round(accepted / drafted, 3) if drafted else 0.0,
        "identical_text": same,
        # the same server's answers over the runs: a slot's cache history can flip a near tie even
        # without speculation, so identical_text is read beside these
        "repeatable_text": {"off": repeatable[False], "ngram": repeatable[True]},
    }


def breakdown(args: argparse.Namespace, model: Path, tasks: dict[str, list[str]]) -> dict[str, object]:
    """Each task's requests on an in-process scheduler, without drafts and with: the step rates' report."""
    from prefill.engine.batch.request import BatchEvent, BatchRequest, Failed
    from prefill.engine.batch.runtime import load_batch_model
    from prefill.engine.batch.scheduler import BatchScheduler
    from prefill.engine.drafts.step_rates import StepRates
    from prefill.engine.events import Finished
    from prefill.engine.message import Message
    from prefill.engine.prompt.model_chat import ModelChat
    from prefill.engine.request import ChatRequest
    from prefill.engine.settings import LoadSettings, ServeSampling

    sampling = ServeSampling(temperature=0.0, repeat_penalty=1.0, max_tokens=args.max_tokens)
    settings = LoadSettings(n_ctx=1024, n_gpu_layers="none", flash_attn="on", n_threads=args.threads)
    out: dict[str, object] = {}
    for mode in ("off", "ngram"):
        sched = BatchScheduler(load_batch_model(model, settings, args.clients), speculative=mode)
        try:
            chat = ModelChat(sched.model.header.chat_template, sched.runtime)
            for name, texts in tasks.items():
                asks = [tuple(chat.prompt(ChatRequest.of([Message("user", t)], sampling))[1]) for t in texts]
                done = [threading.Event() for _ in asks]

                def sink(event: BatchEvent, ended: threading.Event) -> None:
                    if isinstance(event, Finished | Failed):
                        ended.set()

                for _ in range(args.pairs):
                    for ev in done:
                        ev.clear()
                    for p, ended in zip(asks, done, strict=True):
                        sched.submit(BatchRequest(p, sampling, functools.partial(sink, ended=ended)))
                    for ev in done:
                        ev.wait(600)
                out[f"{name}/{mode}"] = sched.rates.report()
                sched.rates = StepRates()  # each task's figures on their own
        finally:
            sched.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, default=None, help="a .gguf (default: the bundled SmolLM2)")
    ap.add_argument("--clients", type=int, default=4, help="clients at once, and the servers' slots")
    ap.add_argument("--requests", type=int, default=1, help="requests per client per run")
    ap.add_argument("--pairs", type=int, default=4, help="off/ngram run pairs per task (ABBA)")
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--threads", type=int, default=0, help="llama.cpp threads (default: Prefill's choice)")
    ap.add_argument("--tasks", default="copy,free")
    ap.add_argument("--breakdown", action="store_true",
                    help="the requests on an in-process scheduler: where a step's time goes, drafted or not")
    args = ap.parse_args()
    model = args.model or bundled_model_path()
    if model is None:
        raise SystemExit("no model: pass --model or install the bundled SmolLM2")
    tasks = {
        "copy": ["Repeat this text exactly:\n\n" + PASSAGES[i % len(PASSAGES)] for i in range(args.clients)],
        "free": [FREE[i % len(FREE)] for i in range(args.clients)],
        "passage": [COPY] * args.clients,  # the chat engine's copy task (speculative_bench.py)
    }
    tasks = {name: tasks[name] for name in args.tasks.split(",")}
    if args.breakdown:
        print(json.dumps({"model": model.name, "clients": args.clients, "breakdown": breakdown(args, model, tasks)}),
              flush=True)
        return 0
    off, off_url = start_server(args, model, "off")
    on, on_url = start_server(args, model, "ngram")
    try:
        for url in (off_url, on_url):
            ask(url, "Hello", 8)  # warm-up
        out: dict[str, object] = {"model": model.name, "clients": args.clients, "requests": args.requests,
                                  "max_tokens": args.max_tokens, "pairs": args.pairs}
        for name, prompts in tasks.items():
            out[name] = compare(off_url, on_url, prompts, args)
    finally:
        for p in (off, on):
            p.send_signal(signal.SIGINT)
            p.wait(timeout=60)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
