"""The server's prompt cache: three conversations with ~1,100-token prompts taking turns on a 2-slot
`prefill serve` (SmolLM2), with the cache off (`--cache-ram 0`, each conversation finds its slot taken
and reads its whole prompt again) and on (the default bound). For each turn after the first: the
prompt's tokens, those reused (`usage.prompt_tokens_details.cached_tokens`), those prefilled, the
new tokens since the conversation's last turn, and the time to the first token. Prints one JSON object;
rerun with:

    PYTHONPATH=app python benchmarks/prompt_cache_bench.py [--model PATH] [--turns 4] [--words 1050]

Goal (issue 35): from turn 2, tokens prefilled per turn <= the new tokens + 64 with three conversations
interleaved on two slots.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "app")]

from prefill.hub.bundled import bundled_model_path  # noqa: E402

VOCAB = ("river", "stone", "lantern", "orchard", "copper", "meadow", "harbor", "signal", "winter", "thread",
         "garden", "engine", "ladder", "market", "silver", "forest", "window", "bridge", "candle", "valley")


def serve(model: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "prefill", "serve", "--model", str(model), "--port", "0", "--gpu-layers", "none",
           "--parallel", "2", "--ctx", "4096", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "app"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if " at http://" not in line:
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, line.split(" at ")[1].split()[0].removesuffix("/v1")


def system_prompt(i: int, words: int) -> str:
    """A long system prompt of its own for conversation `i` (a document the agent works from)."""
    rng = random.Random(i)
    return f"You are assistant number {i}. Work from this document:\n" + " ".join(
        rng.choice(VOCAB) for _ in range(words))


def run(model: Path, cache_args: list[str], turns: int, words: int) -> dict[str, Any]:
    proc, url = serve(model, *cache_args)
    try:
        client = httpx.Client(base_url=url, timeout=600)
        chats = [[{"role": "system", "content": system_prompt(i, words)},
                  {"role": "user", "content": "Summarise the document in one sentence."}] for i in range(3)]
        last = [0, 0, 0]
        rows = []
        for turn in range(turns):
            for i, messages in enumerate(chats):
                body = {"model": model.stem, "messages": messages, "max_tokens": 16, "temperature": 0}
                r = client.post("/v1/chat/completions", json=body)
                r.raise_for_status()
                reply = r.json()
                usage, timings = reply["usage"], reply["timings"]
                prompt, cached = usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]
                if turn:
                    rows.append({"turn": turn + 1, "conversation": i, "prompt_tokens": prompt, "cached_tokens": cached,
                                 "prefilled": prompt - cached, "new_tokens": prompt - last[i],
                                 "ttft_ms": round(timings["ttft_ms"], 1)})
                last[i] = prompt
                messages += [{"role": "assistant", "content": reply["choices"][0]["message"]["content"]},
                             {"role": "user", "content": f"And what does part {turn + 2} say?"}]
        cache = client.get("/slots").json()["prompt_cache"]
        return {
            "args": cache_args, "turns": rows,
            "prompt_tokens_median": statistics.median(r["prompt_tokens"] for r in rows),
            "prefilled_per_turn_median": statistics.median(r["prefilled"] for r in rows),
            "prefilled_per_turn_mean": round(statistics.mean(r["prefilled"] for r in rows), 1),
            "new_tokens_per_turn_median": statistics.median(r["new_tokens"] for r in rows),
            "over_new_tokens_max": max(r["prefilled"] - r["new_tokens"] for r in rows),
            "ttft_ms_median": statistics.median(r["ttft_ms"] for r in rows),
            "prompt_cache": cache,
        }
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=None, help="a chat GGUF (default: the bundled SmolLM2)")
    p.add_argument("--turns", type=int, default=4, help="turns of each conversation (default 4)")
    p.add_argument("--words", type=int, default=1050, help="words of each system prompt (default 1050: prompts of "
                   "about 1,100 tokens on SmolLM2)")
    args = p.parse_args()
    model = args.model or bundled_model_path()
    if model is None:
        raise SystemExit("no model: give --model")
    off = run(model, ["--cache-ram", "0"], args.turns, args.words)
    on = run(model, [], args.turns, args.words)
    print(json.dumps({
        "model": model.name, "slots": 2, "conversations": 3, "load_average": os.getloadavg(),
        "off": off, "on": on,
        "goal_met": on["over_new_tokens_max"] <= 64,
    }, indent=1))


if __name__ == "__main__":
    main()
