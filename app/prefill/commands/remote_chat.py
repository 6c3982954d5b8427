"""`prefill chat --remote URL`: the terminal chat against an OpenAI-compatible server.

The conversation runs as with a local model (commands/chat.py, through the same session); this
module names the endpoint (the key from --api-key, else the one saved with that URL), checks its
model is listed, and keeps an answer that a failure cut short: echoed as it came, then marked, or
printed as a JSON line with its error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

from prefill.commands.errors import CliError
from prefill.commands.terminal_text import terminal_json, terminal_line
from prefill.engine.events import Finished
from prefill.remote.engine import RemoteEngine
from prefill.remote.errors import ModelNotFound, RemoteError
from prefill.session.backends import RemoteEndpoint
from prefill.session.capabilities import Endpoint
from prefill.store.endpoints import EndpointsFile


def remote_target(args: argparse.Namespace, endpoints: EndpointsFile | None = None) -> RemoteEndpoint:
    """The endpoint the options name: the key from --api-key, else the one saved with that URL."""
    key = args.api_key
    saved = (endpoints or EndpointsFile()).for_url(args.remote)
    if not key and saved is not None:
        key = saved.api_key
    model = args.model or (saved.model if saved is not None else "")
    return RemoteEndpoint(args.remote, model, key)


def check_listed(engine: Endpoint, asked: str) -> None:
    """The model asked for must be one the endpoint lists (when it lists any).

    Raises:
        RemoteError: the server cannot be reached, refuses the key, or lists no such model.
    """
    models = engine.list_models()
    if asked and models and asked not in models:
        raise ModelNotFound(engine.base, f"{engine.base} does not list the model {asked!r}; "
                            f"it serves: {', '.join(models[:20])}")
    print(f"prefill: {terminal_line(engine.model)} at {terminal_line(engine.base)}", file=sys.stderr)


def keep_partial(turns: Iterator[Finished], as_json: bool) -> Iterator[Finished]:
    """Pass the answers on; on a remote failure, show what came before it, marked, then stop."""
    try:
        yield from turns
    except RemoteError as e:
        if as_json:
            line = {"answer": e.partial, "reasoning": e.partial_reasoning, "finish_reason": "error",
                    "chat_format": RemoteEngine.chat_format, "error": e.message, "partial": True}
            print(terminal_json(json.dumps(line, ensure_ascii=False)), flush=True)
        elif e.partial or e.partial_reasoning:
            print("\n[the answer above is incomplete]", file=sys.stderr, flush=True)
        raise CliError(e.message) from e
