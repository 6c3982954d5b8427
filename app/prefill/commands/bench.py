"""`prefill bench`: the engine's streaming path against the leanest llama.cpp loop."""

from __future__ import annotations

import argparse
import json

from prefill.commands.options import add_model_options, load_settings, model_path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure the engine against a lean llama.cpp loop")
    add_model_options(p)
    p.add_argument("--prompt-tokens", type=int, default=512)
    p.add_argument("--gen-tokens", type=int, default=256)
    p.add_argument("--reps", type=int, default=3, help="alternating runs of each loop")
    p.add_argument("--json", action="store_true", help="print JSON (the default output is JSON too)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from prefill.bench.runner import bench

    settings = load_settings(args)
    need = args.prompt_tokens + args.gen_tokens + 64
    if settings.n_ctx < need:
        settings = replace(settings, n_ctx=need)
    result = bench(model_path(args), args.prompt_tokens, args.gen_tokens, args.reps, settings)
    print(json.dumps(result, indent=None if args.json else 2))
    return 0
