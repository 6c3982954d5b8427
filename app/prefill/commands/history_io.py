"""`prefill export` and the history half of `prefill import`: chats to and from files.

`prefill import PATH` is shared with the model library: a GGUF file goes to the library
(commands/models.py), anything else is read as a chat history export.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

from prefill.commands.errors import CliError
from prefill.commands.terminal_text import terminal_json, terminal_line, terminal_text
from prefill.store import HistoryStore, StoreError
from prefill.store.history_export import EXPORT_FORMATS, render, write_export
from prefill.store.history_import import open_import_file

GGUF_MAGIC = b"GGUF"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    e = sub.add_parser("export", help="write chats to a Markdown or JSON file (JSON imports back)")
    which = e.add_mutually_exclusive_group()
    which.add_argument(
        "--conversation",
        type=int,
        action="append",
        metavar="ID",
        help="the chat with this id (repeatable)",
    )
    which.add_argument("--all", action="store_true", help="every chat (the default)")
    e.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        required=True,
        help="md: readable; json: complete, for `prefill import`",
    )
    e.add_argument(
        "-o", "--output", type=Path, metavar="PATH", help="write here (default: standard output)"
    )
    add_history_option(e)
    e.set_defaults(handler=run_export)


def add_history_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        default=None,
        help="the history database (default: the one the window uses)",
    )


def is_model_file(path: Path) -> bool:
    """True for a GGUF model (by its name or its first bytes), which `import` adds to the library."""
    if path.suffix.lower() == ".gguf":
        return True
    try:
        with open(path, "rb") as f:
            return f.read(len(GGUF_MAGIC)) == GGUF_MAGIC
    except OSError:
        return False


def run_export(args: argparse.Namespace) -> int:
    try:
        with HistoryStore(args.history) as store:
            conversations = store.export_conversations(args.conversation)
    except StoreError as e:
        raise CliError(str(e)) from None
    except sqlite3.Error as e:
        raise CliError(f"the history could not be read: {e}") from None
    if args.output is None:
        sys.stdout.write(for_stdout(render(conversations, args.format, time.time()), args.format))
    else:
        write_export(args.output.expanduser(), conversations, args.format)
        print(
            f"exported {_count(len(conversations), 'conversation')} to {args.output}",
            file=sys.stderr,
        )
    return 0


def for_stdout(text: str, fmt: str) -> str:
    """An export written to standard output: JSON with what a terminal obeys as \\u escapes (the
    same JSON to a reader); Markdown, the chats' own words, through the filter on a terminal and
    as it is into a pipe or a file."""
    if fmt == "json":
        return terminal_json(text)
    return terminal_text(text) if sys.stdout.isatty() else text


def run_import(args: argparse.Namespace) -> int:
    """Import a chat history export (Prefill's JSON or llama.cpp's web UI) into the history."""
    try:
        checked = open_import_file(args.path.expanduser())  # read chat by chat as the store writes
        with HistoryStore(getattr(args, "history", None)) as store:
            result = store.import_conversations(checked)
    except StoreError as e:
        raise CliError(str(e)) from None
    except sqlite3.Error as e:  # the whole import was rolled back
        raise CliError(f"nothing was imported, the history could not be written: {e}") from None
    source = "Prefill" if checked.source == "prefill" else checked.source
    line = (
        f"imported {_count(result.imported, 'conversation')} "
        f"({_count(result.messages, 'message')}) from a {source} export"
    )
    if result.skipped:
        line += f"; {_count(result.skipped, 'conversation')} already here, skipped"
    if checked.left_out:
        line += f"; {_count(checked.left_out, 'message')} of other branches or tool calls left out"
    print(terminal_line(line))
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
