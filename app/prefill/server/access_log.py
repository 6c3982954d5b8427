"""One line per request on the `prefill.access` logger: method, path, status, tokens and time.

Never a body, a query string or a header (a key travels in one): the path is cut to 200 characters
and anything not printable in it is written as an escape, so a client's path cannot write to the
terminal. The tokens are the answer's (prompt + written), noted by the route that served it
(`note_tokens`); a request that generated nothing shows "-".
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("prefill.access")
MAX_PATH = 200
_KEY = "prefill_tokens"


def note_tokens(scope: Scope, prompt: int, written: int) -> None:
    """What a request's answer read and wrote, for its line."""
    scope.setdefault("state", {})[_KEY] = (prompt, written)


def shown_path(path: str) -> str:
    """The path as the line shows it: printable ASCII, the rest as escapes, cut to MAX_PATH."""
    out = "".join(c if " " <= c <= "~" else c.encode("unicode_escape").decode("ascii") for c in path[:MAX_PATH])
    return out + ("…" if len(path) > MAX_PATH else "")


class AccessLog:
    """ASGI middleware: times each HTTP request and logs its line once the response is sent."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 0

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            state: dict[str, Any] = scope.get("state") or {}
            tokens = state.get(_KEY)
            log.info("%s %s %d %s %.0f ms", scope.get("method", "?"), shown_path(scope.get("path", "")),
                     status or 500, f"{tokens[0]}+{tokens[1]} tokens" if tokens else "-",
                     (time.perf_counter() - began) * 1000)
