"""The door for browsers: loopback is not private from the pages a user has open.

A web page can reach a server on 127.0.0.1. Through DNS rebinding its requests arrive with its
own name in `Host` (Ollama's CVE-2024-28224); a "simple" cross-site POST (`text/plain`, no
preflight) runs without the page reading the reply. So, before any route does work:

- `Host` must name the address the server listens on (loopback names for a loopback bind; the
  bound name and any `--allowed-host` otherwise; any name when bound to every address without a
  list, where the API key guards the door): 421 otherwise.
- A request that carries an `Origin` is served only for an origin `--cors-origin` allows, or the
  server's own: 403 otherwise.
- A POST body must be `application/json`: 415 otherwise (a browser sends JSON only after a
  preflight, which the CORS rules above answer).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from prefill.server.errors import ApiError

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "localhost.localdomain"})
EVERY_ADDRESS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind_host: str, extra: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The host names a request may name for a server bound to `bind_host`; None: any."""
    if is_loopback(bind_host):
        return LOOPBACK_NAMES | {bind_host.lower(), *(h.lower() for h in extra)}
    if bind_host in EVERY_ADDRESS and not extra:
        return None
    return LOOPBACK_NAMES | {bind_host.lower(), *(h.lower() for h in extra)}


def host_name(host: str) -> str:
    """The name in a Host header, without its port ("[::1]:8080" -> "::1")."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class BrowserGuard:
    """ASGI middleware, outermost: Host, Origin and the JSON content type, checked before any work.
    `shape` words a refusal for its path (each dialect's errors have their own shape; default OpenAI's)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None, origins: tuple[str, ...],
                 shape: Callable[[str], Callable[[ApiError], dict[str, object]]] | None = None):
        self.app = app
        self.hosts = hosts
        self.origins = frozenset(o.rstrip("/").lower() for o in origins)
        self.shape = shape

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                body = self.shape(scope["path"])(refusal) if self.shape is not None else refusal.body()
                await _refuse(send, refusal.status, body)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> ApiError | None:
        headers = {k.lower(): v for k, v in scope["headers"]}
        host = headers.get(b"host", b"").decode("latin-1")
        name = host_name(host)
        if self.hosts is not None and name not in self.hosts:
            return ApiError(421, "This server does not answer to the name in the Host header "
                                 f"({host[:80]!r}); call it by its address, or start it with --allowed-host.",
                            code="misdirected_request")
        origin = headers.get(b"origin")
        if origin is not None:
            o = origin.decode("latin-1").rstrip("/").lower()
            own = urlsplit(o).netloc == host.lower() and host != ""
            if o not in self.origins and not own:
                return ApiError(403, "Requests from web pages are refused unless the server was started with "
                                     "--cors-origin for their origin.", code="origin_not_allowed")
        if scope["method"] == "POST":
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if ctype != b"application/json":
                return ApiError(415, "The body must be JSON, sent with 'Content-Type: application/json'.",
                                code="unsupported_media_type")
        return None


async def _refuse(send: Send, status: int, obj: dict[str, object]) -> None:
    body = json.dumps(obj).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
