"""No sub-command: open the window (a terminal chat until the window lands)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="store_true", help="print the version and exit")


def run(args: argparse.Namespace) -> int:
    from prefill import __version__

    if args.version:
        print(f"prefill {__version__}")
        return 0
    from prefill.commands import chat

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    chat.register(sub)
    return chat.run(parser.parse_args(["chat"]))
