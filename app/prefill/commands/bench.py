"""`prefill bench`: the engine's streaming path against the leanest llama.cpp loop."""

from __future__ import annotations

import argparse
import json
from typing import Any

from prefill.commands.options import add_model_options, load_settings, model_path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="measure the engine against a lean llama.cpp loop")
    add_model_options(p)
    p.add_argument("--prompt-tokens", type=int, default=512, help="prompt length (default 512)")
    p.add_argument("--gen-tokens", type=int, default=256, help="tokens generated per run (default 256)")
    p.add_argument("--reps", type=int, default=3, help="alternating runs of each loop (default 3)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (every figure and run) instead of a table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from prefill.bench.side_by_side import bench

    settings = load_settings(args)
    need = args.prompt_tokens + args.gen_tokens + 64
    if settings.n_ctx < need:
        settings = replace(settings, n_ctx=need)
    result = bench(model_path(args), args.prompt_tokens, args.gen_tokens, args.reps, settings)
    print(json.dumps(result) if args.json else table(result))
    return 0


_ROWS = (("prefill tok/s", "prefill_tps"), ("decode tok/s", "decode_tps"),
         ("ms/token, first", "ms_per_token_first"), ("ms/token, last", "ms_per_token_last"))


def table(result: dict[str, Any]) -> str:
    """The medians of both loops and their ratio, one figure a line (what `--json` prints in full)."""
    e, lean, ratio = result["engine"], result["lean"], result["ratio"]
    lines = [f"{result['model']} · {result['backend']} · median of {result['reps']} runs each",
             f"{'':<17}{'engine':>10}{'lean':>10}{'ratio':>8}"]
    lines += [f"{label:<17}{e[key]:>10.1f}{lean[key]:>10.1f}{ratio[key]:>8.2f}" for label, key in _ROWS]
    return "\n".join(lines)
