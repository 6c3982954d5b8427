"""`prefill serve`: an OpenAI-compatible HTTP server with parallel slots."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from prefill.commands.errors import CliError
from prefill.commands.options import add_model_options, chosen_projector, draft_max, load_settings, model_path
from prefill.commands.terminal_text import terminal_line
from prefill.engine.speculation import DRAFT_MAX, Speculation


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve", help="serve the model over an OpenAI-compatible HTTP API",
        description="Serve a model over an OpenAI-compatible HTTP API. --ctx is the context of each of "
                    "the --parallel slots (they share one llama.cpp context of ctx x parallel cells).")
    add_model_options(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs --api-key)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    p.add_argument("--parallel", type=int, default=4, help="requests decoded together (default 4)")
    p.add_argument("--api-key", default=os.environ.get("PREFILL_API_KEY", ""),
                   help="require 'Authorization: Bearer KEY' (default: $PREFILL_API_KEY; a key given here "
                        "shows in the process list)")
    p.add_argument("--api-key-file", type=Path, default=None,
                   help="read the key from this file's first line (keep it 0600)")
    p.add_argument("--cors-origin", action="append", default=[],
                   help="allow browser requests from this origin (repeatable; CORS is off without it)")
    p.add_argument("--allowed-host", action="append", default=[],
                   help="another name clients may call the server by (repeatable; Host is checked against it)")
    p.add_argument("--max-queue", type=int, default=0,
                   help="requests that may wait for a slot before more get 429 (default: 8 per slot)")
    p.add_argument("--alias", default="", help="the model's id in the API (default: the file name)")
    p.add_argument("--mmproj", metavar="PATH", default="",
                   help="the vision model's projector, for image_url parts (default: the mmproj*.gguf beside the "
                        "model; 'none': no images)")
    p.add_argument("--allow-remote-images", action="store_true",
                   help="fetch image_url parts' http(s) URLs (default: only base64 data: URLs are read)")
    p.add_argument("--speculative", metavar="off|ngram|PATH.gguf", default="off",
                   help="greedy requests (temperature 0, no penalties, no grammar) check several drafted tokens "
                        "a step: ngram takes drafts from their own prompt and answer, PATH.gguf from a small "
                        "draft model with the model's vocabulary (default off)")
    p.add_argument("--draft-max", type=draft_max, default=DRAFT_MAX, metavar="N",
                   help=f"with --speculative: the longest draft a slot checks in one step, 1 to 32 "
                        f"(default {DRAFT_MAX})")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from prefill.server.lifecycle import ExposureError, ServeOptions, check_exposure, serve

    if args.api_key_file is not None:
        args.api_key = read_key_file(args.api_key_file)
    elif args.api_key and args.api_key != os.environ.get("PREFILL_API_KEY", ""):
        print("prefill: a key given as --api-key shows in the process list to every user of this machine; "
              "set PREFILL_API_KEY instead", file=sys.stderr)
    if not 1 <= args.parallel <= 64:
        raise CliError("--parallel must be between 1 and 64")
    if not 0 <= args.port <= 65535:
        raise CliError("--port must be between 0 and 65535")
    try:
        check_exposure(args.host, args.api_key)  # before the model loads: fail fast
    except ExposureError as e:
        raise CliError(str(e)) from None
    try:
        speculation = Speculation.from_flag(args.speculative, args.draft_max)
    except ValueError as e:
        raise CliError(f"--speculative: {e}") from None
    draft = Path(speculation.draft_wanted) if speculation.draft_wanted else None
    if draft is not None and not draft.is_file():
        raise CliError(f"--speculative {args.speculative}: no such draft model file")
    options = ServeOptions(
        model=model_path(args), settings=load_settings(args), host=args.host, port=args.port,
        parallel=args.parallel, api_key=args.api_key, cors_origins=tuple(args.cors_origin),
        allowed_hosts=tuple(args.allowed_host), max_queued=max(0, args.max_queue),
        mmproj=projector_path(args), allow_remote_images=args.allow_remote_images,
        model_id=args.alias, speculation=speculation,
    )

    def ready(url: str, scheduler: object) -> None:
        n_ctx = getattr(scheduler, "n_ctx_seq", 0)
        print(f"prefill: serving {terminal_line(options.model.name)} at {url}/v1 "
              f"({args.parallel} slots of {n_ctx} tokens)", flush=True)
        note = getattr(scheduler, "speculation_note", "")
        if note:
            print(f"prefill: --speculative {terminal_line(args.speculative)} is off: {terminal_line(note)}",
                  file=sys.stderr, flush=True)
        elif draft is not None:
            print(f"prefill: draft model: {terminal_line(draft.name)}: greedy requests check its drafts",
                  file=sys.stderr, flush=True)

    _print_access_log()
    serve(options, ready)
    return 0


def _print_access_log() -> None:
    """One line per request on stderr (server/access_log.py: no bodies, no keys, the path escaped)."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("prefill: %(message)s"))
    access = logging.getLogger("prefill.access")
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False


def projector_path(args: argparse.Namespace) -> Path | None:
    """--mmproj's file, else the mmproj*.gguf beside the model (said on stderr, so the person knows which)."""
    path, how = chosen_projector(args.mmproj, model_path(args))
    if path is not None:
        print(f"prefill: projector: {terminal_line(path.name)}{how}: image_url parts are read", file=sys.stderr,
              flush=True)
    return path


def read_key_file(path: Path) -> str:
    """The key on the file's first line; a file others can read is used, with a warning."""
    try:
        key = path.read_text("utf-8").splitlines()[0].strip() if path.stat().st_size <= 4096 else ""
    except (OSError, UnicodeDecodeError, IndexError) as e:
        raise CliError(f"--api-key-file {path}: cannot read a key from it ({e.__class__.__name__})") from None
    if not key:
        raise CliError(f"--api-key-file {path}: its first line holds no key (or the file is over 4 KiB)")
    if path.stat().st_mode & 0o077:
        print(f"prefill: {path} can be read by other users of this machine; chmod 600 it", file=sys.stderr)
    return key
