"""Names a model may see: one per tool, unique across servers, only [A-Za-z0-9_-], at most 64 characters.

OpenAI-style APIs and most chat templates accept nothing else in a function name, and two servers
may both offer a `search`. A tool `read file` on server `my files` becomes `my_files__read_file`;
a clash gets `_2`, `_3`… The MCP client keeps the map back to (server, tool), and never gives a name it
has given once to another server's tool: names are cut, so two servers can share a prefix, and a
name that moved when a server stopped would carry what was said about one tool to another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_CHARS = 64
SERVER_CHARS = 24  # of the 64, at most this much names the server, so the tool's own name survives
SEPARATOR = "__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def model_name(server: str, tool: str, taken: set[str]) -> str:
    """The model-facing name for `tool` on `server`: its plain form, or with `_2`, `_3`… when that
    is in `taken` (lower-cased names). Adds the name given to `taken`."""
    base = (_clean(server)[:SERVER_CHARS] + SEPARATOR + _clean(tool))[:MAX_CHARS]
    name, n = base, 2
    while name.lower() in taken:
        suffix = f"_{n}"
        name, n = base[: MAX_CHARS - len(suffix)] + suffix, n + 1
    taken.add(name.lower())
    return name


def model_names(tools: Iterable[tuple[str, str]]) -> list[str]:
    """One model-facing name per (server, tool) pair, in order; unique ignoring case.

    The same pairs in the same order always get the same names.
    """
    taken: set[str] = set()
    return [model_name(server, tool, taken) for server, tool in tools]


def _clean(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_") or "x"
