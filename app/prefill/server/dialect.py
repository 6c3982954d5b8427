"""What a dialect gives the route table: its routes, and how it words an error.

A dialect (openai/, anthropic/, responses/) is a folder that parses its bodies into the core's
`GenerationRequest` (core.py) and writes its own replies, streams and errors. Adding one is its
folder and a line in routes.py's `DIALECTS`; the doors (Host, Origin, content type, key, body and
cost limits) are the app's and stand before every route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from prefill.server.errors import ApiError
from prefill.server.state import ServeState

Handler = Callable[[ServeState, Request], Awaitable[Response]]


def openai_error(err: ApiError) -> dict[str, object]:
    """OpenAI's shape, the server's default: {"error": {"message", "type", "param", "code"}}."""
    return err.body()


@dataclass(frozen=True)
class DialectRoute:
    method: str  # GET, POST or DELETE (GET answers HEAD too)
    path: str  # Starlette's path syntax
    handler: Handler


@dataclass(frozen=True)
class Dialect:
    """A wire protocol: its routes, and its error body (an error on one of its paths, the key's
    refusal included, is written in its shape)."""

    name: str
    routes: tuple[DialectRoute, ...]
    error_body: Callable[[ApiError], dict[str, object]] = openai_error
    prefixes: tuple[str, ...] = ()  # paths under these have errors in this shape, before routing

    def owns(self, path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in self.prefixes)
