"""The Starlette application: routes, the API key, CORS, what a request may cost, OpenAI-shaped errors.

Routes: GET /v1/models (and /v1/models/{id}), POST /v1/chat/completions, POST /v1/completions,
GET /models, POST /models/load and /models/unload (pool_routes.py), GET /slots (the schedulers'
snapshots), GET /health (open, for probes), GET and HEAD / (what is here: clients probe it). Any
other path is a 404 that names it and lists these. A request names its model: it is leased from the
pool (loaded first when it is not resident) from the moment its body is read until it is submitted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from prefill.engine.errors import EngineError, GrammarError, TemplateError
from prefill.engine.message import images_of
from prefill.engine.prompt.model_chat import plain_reader
from prefill.engine.request import ChatRequest
from prefill.engine.vision.prompt_images import tokenize_with_images
from prefill.pool.pool import Lease
from prefill.server import pool_routes
from prefill.server.access_log import AccessLog, note_tokens, shown_path
from prefill.server.browser_guard import BrowserGuard
from prefill.server.compaction import compact
from prefill.server.cost_bounds import read_body
from prefill.server.errors import ApiError, bad_request, server_error, unauthorized
from prefill.server.generate import EventSourceResponse, EventStream, full_reply, stream_reply, submit
from prefill.server.images import attach_images
from prefill.server.parse import GenerationRequest, parse_chat, parse_completion, parse_json, requested_model
from prefill.server.shapes import Reply
from prefill.server.state import ServedModel, ServeState

log = logging.getLogger(__name__)
OPEN_PATHS = ("/health",)
ROUTES = ["GET /v1/models", "GET /v1/models/{id}", "POST /v1/chat/completions", "POST /v1/completions",
          "GET /models", "POST /models/load", "POST /models/unload", "GET /slots", "GET /health", "GET /"]
__all__ = ["ROUTES", "ServeState", "create_app", "read_body"]


def create_app(state: ServeState) -> Starlette:
    routes = [
        Route("/", _route(state, _root), methods=["GET"]),  # HEAD too (Starlette answers it for GET)
        Route("/v1/models", _route(state, pool_routes.models), methods=["GET"]),
        Route("/v1/models/{model_id:path}", _route(state, pool_routes.model), methods=["GET"]),
        Route("/v1/chat/completions", _route(state, _chat), methods=["POST"]),
        Route("/v1/completions", _route(state, _completion), methods=["POST"]),
        Route("/models", _route(state, pool_routes.pool_models), methods=["GET"]),
        Route("/models/load", _route(state, pool_routes.load), methods=["POST"]),
        Route("/models/unload", _route(state, pool_routes.unload), methods=["POST"]),
        Route("/slots", _route(state, pool_routes.slots), methods=["GET"]),
        Route("/health", _route(state, _health), methods=["GET"]),
    ]
    # Outermost: a browser's request that will be refused costs nothing (STYLE 20).
    middleware = [Middleware(BrowserGuard, hosts=state.hosts, origins=state.cors_origins)]
    if state.cors_origins:  # off unless asked for; outermost, so preflights need no key
        middleware.append(Middleware(CORSMiddleware, allow_origins=list(state.cors_origins),
                                     allow_methods=["GET", "POST"], allow_headers=["Authorization", "Content-Type"]))
    if state.api_key:
        middleware.append(Middleware(BearerAuth, key=state.api_key))
    middleware.insert(0, Middleware(AccessLog))  # outermost: refused requests get their line too
    return Starlette(routes=routes, middleware=middleware, exception_handlers={
        ApiError: _api_error, HTTPException: _http_error, Exception: _crash,
    })


Handler = Callable[[ServeState, Request], Awaitable[Response]]


def _route(state: ServeState, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await handler(state, request)
    return endpoint


# --- handlers ------------------------------------------------------------------------------
async def _root(state: ServeState, request: Request) -> Response:
    return JSONResponse({"status": "ok", "server": "prefill", "models": state.pool.ids(), "paths": ROUTES})


async def _health(state: ServeState, request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _chat(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_chat(obj, name)  # the whole body checked before any model loads for it
    with await state.lease(name, keep_alive) as lease:
        served = state.served(lease.resident)
        if req.images:  # read and checked before anything is rendered; refused first when they cannot be
            messages = await attach_images(req.messages, req.images, served.scheduler.projector is not None,
                                           state.allow_remote_images, decoder=state.images, receive=request.receive)
            req = replace(req, messages=messages)
        return await _generate(served, lease, state, request, req)


async def _completion(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_completion(obj, name)
    with await state.lease(name, keep_alive) as lease:
        return await _generate(state.served(lease.resident), lease, state, request, req)


async def _generate(served: ServedModel, lease: Lease, state: ServeState, request: Request,
                    req: GenerationRequest) -> Response:
    """Render, submit and answer; the request is submitted through the model's `ChatModel`, which keeps
    it resident until the request ends (the lease ends when this returns)."""
    n_vocab = served.chat.runtime.n_vocab
    unknown = [t for t, _ in req.sampling.logit_bias if t >= n_vocab]
    if unknown:
        raise bad_request(f"'logit_bias' names token {unknown[0]}, which this model does not have "
                          f"(its tokens are 0 to {n_vocab - 1}).", "logit_bias")
    chat = req.chat_request if req.kind == "chat" else None  # the turn as every backend takes it, built once
    compacted: dict[str, object] | None = None
    if chat is not None and req.compaction == "auto":  # a conversation past the threshold goes on from a summary
        chat, compacted = await compact(served.scheduler, served.chat, served.waker(), chat, req.sampling,
                                        client_of(request))
    try:  # a schema that makes no grammar is the client's to fix; pricing it may take ~0.1 s: off the loop
        constraint = await anyio.to_thread.run_sync(served.chat.constraint, chat) if chat is not None else None
    except GrammarError as e:
        raise bad_request(str(e), "response_format" if req.tools.response_format else "tools") from None
    text, prompt = await _build_prompt(served, req, chat)
    reply = Reply(req.kind, lease.resident.id, extra={"compaction": compacted} if compacted else {},
                  load_ms=lease.load_ms)
    stream = EventStream(served.waker(), tokens=req.stream)
    stream.on_end = lambda m: note_tokens(request.scope, m.prompt_tokens, m.completion_tokens)
    sampling = req.sampling
    if req.kind == "chat":  # the chat format's turn markers end the answer, written as text too
        sampling = replace(sampling, stop=served.chat.stops(sampling))
    if sampling.max_tokens > served.scheduler.n_ctx_seq:
        sampling = replace(sampling, max_tokens=served.scheduler.n_ctx_seq)
    thinking = served.chat.thinking_limit(text, chat) if chat is not None else None
    handle = submit(served.model, prompt, sampling, stream, reply.id, client_of(request), constraint, thinking)
    splitter = served.chat.reader(text, as_written=True, request=chat) if chat is not None else plain_reader()
    if req.stream:
        body = stream_reply(reply, handle, stream, splitter, req.include_usage)
        return EventSourceResponse(body, handle, state.write_deadline_s)
    return JSONResponse(await full_reply(reply, handle, stream, splitter, request))


async def _build_prompt(served: ServedModel, req: GenerationRequest,
                        chat_request: ChatRequest | None) -> tuple[str, list[int]]:
    """The prompt's text and tokens (a chat's, or a completion's prompt), refused as soon as it cannot
    fit; a few are built at once (across every model)."""
    bounds, chat = served.bounds, served.chat

    def build() -> tuple[str, list[int]]:
        text = chat.text_of(chat_request) if chat_request is not None else req.prompt
        bounds.check_text(text)
        if chat_request is None or not req.images:
            return text, chat.tokenize(text)
        images = images_of(chat_request.messages)
        return text, tokenize_with_images(text, True, chat.tokenize, images, served.scheduler.projector)

    if chat_request is not None:
        bounds.check_messages(chat_request.messages)
    async with bounds.builds():
        try:
            return await anyio.to_thread.run_sync(build)
        except TemplateError as e:
            raise bad_request(str(e), "messages") from None
        except EngineError as e:  # the projector refused an image
            raise bad_request(f"An image could not be read: {e}.", "messages") from None


def client_of(request: Request) -> str:
    """Whose conversation a request continues: the bearer token it presents (hashed), so clients
    with different keys never share a cached prefix; clients that send none share one."""
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    return "client:" + hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()[:32]


# --- errors ---------------------------------------------------------------------------------
async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


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
    return JSONResponse(err.body(), status_code=exc.status_code, headers=exc.headers)


async def _crash(request: Request, exc: Exception) -> Response:
    log.exception("request failed", exc_info=exc)
    return JSONResponse(server_error(f"The server failed: {type(exc).__name__}.").body(), status_code=500)


class BearerAuth:
    """ASGI middleware: every path but OPEN_PATHS needs `Authorization: Bearer KEY`.
    Compared in constant time, so the key cannot be guessed a byte at a time."""

    def __init__(self, app: ASGIApp, key: str):
        self.app = app
        self.key = key.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS:
            header = dict(scope["headers"]).get(b"authorization", b"")
            token = header[7:].strip() if header[:7].lower() == b"bearer " else b""
            if not hmac.compare_digest(token, self.key):
                body = json.dumps(unauthorized().body()).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
