"""No sub-command: open the window (or run the self-test)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--self-test", action="store_true",
                        help="load the bundled model, generate a few tokens, print the figures, exit")
    parser.add_argument("--model", dest="window_model", metavar="PATH|bundled",
                        help='open the window with this .gguf loaded ("bundled": the bundled SmolLM2)')


def run(args: argparse.Namespace) -> int:
    if args.version:
        from prefill import __version__

        print(f"prefill {__version__}")
        return 0
    if args.self_test:
        from prefill.commands import self_test

        return self_test.run()
    from prefill.ui.app import run_app

    return run_app(args.window_model)
