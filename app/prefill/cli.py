"""The one entry point: no arguments opens the window; sub-commands for the rest."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from prefill.commands.errors import CliError
from prefill.engine.errors import EngineError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, no usage dump
        from prefill.commands.terminal_text import terminal_line

        print(f"prefill: {terminal_line(message)}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    from prefill.commands import bench, chat, docs, history_io, models, ps, serve, window

    parser = _Parser(prog="prefill", description="Chat with local LLMs and watch the engine work.")
    window.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for module in (chat, bench, models, history_io, serve, ps, docs):
        module.register(sub)
    return parser


def _window_only(argv: list[str]) -> bool:
    """No sub-command: the window. Its start-up then imports none of the other commands."""
    return not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help"))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if _window_only(argv):
        from prefill.commands import window

        parser: argparse.ArgumentParser = _Parser(
            prog="prefill", description="Chat with local LLMs and watch the engine work.")
        window.add_arguments(parser)
    else:
        parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    try:
        if handler is None:
            from prefill.commands import window

            return window.run(args)
        return int(handler(args) or 0)
    except (CliError, EngineError, OSError) as e:
        from prefill.commands.terminal_text import terminal_line  # here: the window's start-up imports no command

        print(f"prefill: {terminal_line(str(e))}", file=sys.stderr)  # errors quote outside text
        return 1
    except KeyboardInterrupt:
        return 130
