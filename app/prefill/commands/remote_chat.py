"""`prefill chat --remote URL`: the terminal chat against an OpenAI-compatible server.

The conversation runs as with a local model (commands/chat.py); this module opens the remote
engine (the key from --api-key, else the one saved with that URL) and keeps an answer that a
failure cut short: echoed as it came, then marked, or printed as a JSON line with its error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

from prefill.commands.errors import CliError
from prefill.engine.events import Finished
from prefill.remote.engine import RemoteEngine
from prefill.remote.errors import ModelNotFound, RemoteError
from prefill.store.endpoints import EndpointsFile


def open_remote(args: argparse.Namespace, endpoints: EndpointsFile | None = None) -> RemoteEngine:
    """The remote engine the options name, its model checked against its /v1/models.

    Raises:
        RemoteError: the server cannot be reached, refuses the key, or lists no such model.
    """
    key = args.api_key
    saved = (endpoints or EndpointsFile()).for_url(args.remote)
    if not key and saved is not None:
        key = saved.api_key
    model = args.model or (saved.model if saved is not None else "")
    engine = RemoteEngine(args.remote, model, key)
    try:
        models = engine.list_models()
        if not model:
            engine.resolve_model()
        elif models and model not in models:
            raise ModelNotFound(engine.base, f"{engine.base} does not list the model {model!r}; "
                                f"it serves: {', '.join(models[:20])}")
    except RemoteError:
        engine.close()
        raise
    print(f"prefill: {engine.model} at {engine.base}", file=sys.stderr)
    return engine


def keep_partial(turns: Iterator[Finished], as_json: bool) -> Iterator[Finished]:
    """Pass the answers on; on a remote failure, show what came before it, marked, then stop."""
    try:
        yield from turns
    except RemoteError as e:
        if as_json:
            line = {"answer": e.partial, "reasoning": e.partial_reasoning, "finish_reason": "error",
                    "chat_format": RemoteEngine.chat_format, "error": e.message, "partial": True}
            print(json.dumps(line, ensure_ascii=False), flush=True)
        elif e.partial or e.partial_reasoning:
            print("\n[the answer above is incomplete]", file=sys.stderr, flush=True)
        raise CliError(e.message) from e
