"""`prefill bench`: the engine's streaming path against the leanest llama.cpp loop; with
`--speculative`, speculative decoding against plain decoding on the same prompts."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from prefill.commands.errors import CliError
from prefill.commands.options import add_model_options, load_settings, model_path
from prefill.commands.terminal_text import terminal_json, terminal_text
from prefill.engine.speculation import DRAFT_MAX

if TYPE_CHECKING:
    from prefill.engine.settings import LoadSettings


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="measure the engine against a lean llama.cpp loop")
    add_model_options(p)
    p.add_argument("--prompt-tokens", type=int, default=512, help="prompt length (default 512)")
    p.add_argument("--gen-tokens", type=int, default=256, help="tokens generated per run (default 256)")
    p.add_argument("--reps", type=int, default=3, help="alternating runs of each loop (default 3)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (every figure and run) instead of a table")
    p.add_argument("--speculative", metavar="ngram|DRAFT.gguf",
                   help="compare speculative decoding with plain decoding instead: drafts from the text itself "
                        "(ngram) or from a draft model; greedy, flash attention on, on a copy task and a task "
                        "with nothing to copy")
    p.add_argument("--draft-max", type=int, default=DRAFT_MAX,
                   help=f"with --speculative: the longest draft (default {DRAFT_MAX})")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    settings = load_settings(args)
    if args.speculative:
        return _speculative(args, settings)
    from prefill.bench.side_by_side import bench

    need = args.prompt_tokens + args.gen_tokens + 64
    if settings.n_ctx < need:
        settings = replace(settings, n_ctx=need)
    result = bench(model_path(args), args.prompt_tokens, args.gen_tokens, args.reps, settings)
    print(terminal_json(json.dumps(result)) if args.json else terminal_text(table(result)))
    return 0


def _speculative(args: argparse.Namespace, settings: LoadSettings) -> int:
    from pathlib import Path

    from prefill.bench import speculative_compare

    if not 1 <= args.draft_max <= 32:
        raise CliError(f"--draft-max: {args.draft_max} is not between 1 and 32")
    if args.speculative != "ngram" and not Path(args.speculative).expanduser().is_file():
        raise CliError(f"--speculative: expected ngram or a draft model's .gguf file, not {args.speculative!r}")
    draft = args.speculative if args.speculative == "ngram" else str(Path(args.speculative).expanduser())
    # A refused model or draft model is an EngineError: the CLI says it in one line.
    result = speculative_compare.compare(model_path(args), draft, args.gen_tokens, args.reps, settings, args.draft_max)
    print(terminal_json(json.dumps(result)) if args.json else terminal_text(speculative_compare.table(result)))
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
