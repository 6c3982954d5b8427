"""The Starlette application: the doors, the route table, the API key, CORS, errors in each dialect's shape.

Routes: GET /v1/models (and /v1/models/{id}), each dialect's (`DIALECTS`, the route table: OpenAI's
POST /v1/chat/completions and /v1/completions, Anthropic's POST /v1/messages and
/v1/messages/count_tokens, OpenAI's Responses POST /v1/responses, GET and DELETE /v1/responses/{id},
Ollama's /api/chat, /api/generate, /api/tags, /api/ps, /api/show and /api/version, POST /v1/embeddings
and llama.cpp's POST /v1/rerank), GET /models,
POST /models/load and /models/unload (pool_routes.py),
GET /slots (the schedulers' snapshots), GET /health (open, for probes), GET and HEAD / (what is
here: clients probe it). Any other path is a 404 that names it and lists these. A request names its
model: it is leased from the pool (loaded first when it is not resident) from the moment its body is
read until it is submitted. Every route stands behind the same doors (Host, Origin, content type,
key, body and cost limits).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from prefill.server import pool_routes
from prefill.server.access_log import AccessLog, shown_path
from prefill.server.anthropic import routes as anthropic_routes
from prefill.server.browser_guard import BrowserGuard
from prefill.server.core import client_of
from prefill.server.cost_bounds import read_body
from prefill.server.dialect import Dialect, Handler, openai_error
from prefill.server.embeddings import routes as embeddings_routes
from prefill.server.errors import ApiError, server_error, unauthorized
from prefill.server.ollama import routes as ollama_routes
from prefill.server.openai import routes as openai_routes
from prefill.server.responses import routes as responses_routes
from prefill.server.state import ServeState

log = logging.getLogger(__name__)
OPEN_PATHS = ("/health",)
# The route table: each dialect's routes (a new dialect is its folder and a line here).
DIALECTS: tuple[Dialect, ...] = (openai_routes.DIALECT, anthropic_routes.DIALECT, responses_routes.DIALECT,
                                 ollama_routes.DIALECT, embeddings_routes.DIALECT)
ROUTES = ["GET /v1/models", "GET /v1/models/{id}", *(f"{r.method} {r.path}" for d in DIALECTS for r in d.routes),
          "GET /models", "POST /models/load", "POST /models/unload", "GET /slots", "GET /health", "GET /"]
__all__ = ["DIALECTS", "ROUTES", "ServeState", "client_of", "create_app", "read_body"]


def create_app(state: ServeState) -> Starlette:
    routes = [
        Route("/", _route(state, _root), methods=["GET"]),  # HEAD too (Starlette answers it for GET)
        Route("/v1/models", _route(state, pool_routes.models), methods=["GET"]),
        Route("/v1/models/{model_id:path}", _route(state, pool_routes.model), methods=["GET"]),
        *(Route(r.path, _route(state, r.handler, d), methods=[r.method]) for d in DIALECTS for r in d.routes),
        Route("/models", _route(state, pool_routes.pool_models), methods=["GET"]),
        Route("/models/load", _route(state, pool_routes.load), methods=["POST"]),
        Route("/models/unload", _route(state, pool_routes.unload), methods=["POST"]),
        Route("/slots", _route(state, pool_routes.slots), methods=["GET"]),
        Route("/health", _route(state, _health), methods=["GET"]),
    ]
    # Outermost: a browser's request that will be refused costs nothing (STYLE 20).
    middleware = [Middleware(BrowserGuard, hosts=state.hosts, origins=state.cors_origins, shape=error_shape)]
    if state.cors_origins:  # off unless asked for; outermost, so preflights need no key
        middleware.append(Middleware(CORSMiddleware, allow_origins=list(state.cors_origins),
                                     allow_methods=["GET", "POST", "DELETE"],
                                     allow_headers=["Authorization", "Content-Type", "x-api-key", "anthropic-version",
                                                    "anthropic-beta"]))
    if state.api_key:
        middleware.append(Middleware(BearerAuth, key=state.api_key))
    middleware.insert(0, Middleware(AccessLog))  # outermost: refused requests get their line too
    return Starlette(routes=routes, middleware=middleware, exception_handlers={
        ApiError: _api_error, HTTPException: _http_error, Exception: _crash,
    })


def _route(state: ServeState, handler: Handler, dialect: Dialect | None = None
           ) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of `handler`; a dialect's errors are written in its shape."""
    if dialect is None or dialect.error_body is openai_error:
        async def endpoint(request: Request) -> Response:
            return await handler(state, request)
        return endpoint
    shape = dialect.error_body

    async def shaped(request: Request) -> Response:
        try:
            return await handler(state, request)
        except ApiError as e:
            return JSONResponse(shape(e), status_code=e.status, headers=e.headers)
    return shaped


def error_shape(path: str) -> Callable[[ApiError], dict[str, object]]:
    """How an error on `path` is written: the dialect's that owns it, else OpenAI's."""
    return next((d.error_body for d in DIALECTS if d.owns(path)), openai_error)


# --- handlers ------------------------------------------------------------------------------
async def _root(state: ServeState, request: Request) -> Response:
    return JSONResponse({"status": "ok", "server": "prefill", "models": state.pool.ids(), "paths": ROUTES})


async def _health(state: ServeState, request: Request) -> Response:
    return JSONResponse({"status": "ok"})


# --- errors ---------------------------------------------------------------------------------
async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse(error_shape(request.url.path)(exc), status_code=exc.status, headers=exc.headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    said = f"{request.method} {shown_path(request.url.path)}"
    if exc.status_code == 404:
        message = f"There is no {said} here. This server answers: {', '.join(ROUTES)}."
    elif exc.status_code == 405:
        message = f"{said} is not answered here. This server answers: {', '.join(ROUTES)}."
    else:
        message = exc.detail or "Request failed."
    err = ApiError(exc.status_code, message, code="not_found" if exc.status_code == 404 else None)
    return JSONResponse(error_shape(request.url.path)(err), status_code=exc.status_code, headers=exc.headers)


async def _crash(request: Request, exc: Exception) -> Response:
    log.exception("request failed", exc_info=exc)
    err = server_error(f"The server failed: {type(exc).__name__}.")
    return JSONResponse(error_shape(request.url.path)(err), status_code=500)


class BearerAuth:
    """ASGI middleware: every path but OPEN_PATHS needs `Authorization: Bearer KEY` (or Anthropic's
    `x-api-key: KEY`). Compared in constant time, so the key cannot be guessed a byte at a time; the
    refusal is in the shape of the dialect whose path it is."""

    def __init__(self, app: ASGIApp, key: str):
        self.app = app
        self.key = key.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS:
            headers = dict(scope["headers"])
            header = headers.get(b"authorization", b"")
            token = header[7:].strip() if header[:7].lower() == b"bearer " else headers.get(b"x-api-key", b"").strip()
            if not hmac.compare_digest(token, self.key):
                body = json.dumps(error_shape(scope["path"])(unauthorized())).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
