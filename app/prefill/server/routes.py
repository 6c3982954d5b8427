"""The Starlette application: routes, the API key, CORS, what a request may cost, OpenAI-shaped errors.

Routes: GET /v1/models (and /v1/models/{id}), POST /v1/chat/completions, POST /v1/completions,
GET /slots (the scheduler's snapshot), GET /health (open, for probes), GET and HEAD / (what is here:
clients probe it). Any other path is a 404 that names it and lists these.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.errors import EngineError, GrammarError, TemplateError
from prefill.engine.message import images_of
from prefill.engine.prompt.model_chat import ModelChat, plain_reader
from prefill.engine.request import ChatRequest
from prefill.engine.vision.prompt_images import tokenize_with_images
from prefill.server.access_log import AccessLog, note_tokens, shown_path
from prefill.server.browser_guard import LOOPBACK_NAMES, BrowserGuard
from prefill.server.compaction import compact
from prefill.server.cost_bounds import PromptBounds, body_limit
from prefill.server.errors import ApiError, bad_request, server_error, too_large, unauthorized
from prefill.server.generate import WRITE_DEADLINE_S, EventSourceResponse, EventStream, full_reply, stream_reply, submit
from prefill.server.images import IMAGE_BODY_BYTES, ImageDecoder, attach_images
from prefill.server.loop_waker import LoopWaker
from prefill.server.parse import GenerationRequest, parse_chat, parse_completion, parse_json
from prefill.server.shapes import Reply, model_list

log = logging.getLogger(__name__)
OPEN_PATHS = ("/health",)
ROUTES = ["GET /v1/models", "GET /v1/models/{id}", "POST /v1/chat/completions", "POST /v1/completions",
          "GET /slots", "GET /health", "GET /"]


@dataclass
class ServeState:
    """What the routes serve from; built once by the caller and passed in."""

    scheduler: BatchScheduler
    chat: ModelChat
    model_id: str
    api_key: str = ""
    cors_origins: tuple[str, ...] = ()
    hosts: frozenset[str] | None = LOOPBACK_NAMES  # the names Host may carry (None: any)
    max_body: int = 0  # bytes; 0: what the slot's context can hold (cost_bounds.body_limit), and images
    allow_remote_images: bool = False  # fetch image_url parts' http(s) URLs (off: data: URLs only)
    write_deadline_s: float = WRITE_DEADLINE_S  # a stream's client that takes nothing this long is dropped
    created: int = field(default_factory=lambda: int(time.time()))
    bounds: PromptBounds = field(init=False)
    images: ImageDecoder = field(default_factory=ImageDecoder, init=False, repr=False)  # decodes, off the builds
    _waker: LoopWaker | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        n_ctx = self.scheduler.n_ctx_seq
        can_see = self.scheduler.projector is not None
        self.max_body = self.max_body or body_limit(n_ctx) + (IMAGE_BODY_BYTES if can_see else 0)
        self.bounds = PromptBounds(n_ctx, self.scheduler.runtime.longest_token_bytes)

    def waker(self) -> LoopWaker:
        """The one waker of the loop serving these routes (made on the first request, on that loop)."""
        loop = asyncio.get_running_loop()
        if self._waker is None or self._waker.loop is not loop:
            self._waker = LoopWaker(loop)
            self.scheduler.on_events = self._waker.step_done
        return self._waker


def create_app(state: ServeState) -> Starlette:
    routes = [
        Route("/", _route(state, _root), methods=["GET"]),  # HEAD too (Starlette answers it for GET)
        Route("/v1/models", _route(state, _models), methods=["GET"]),
        Route("/v1/models/{model_id:path}", _route(state, _model), methods=["GET"]),
        Route("/v1/chat/completions", _route(state, _chat), methods=["POST"]),
        Route("/v1/completions", _route(state, _completion), methods=["POST"]),
        Route("/slots", _route(state, _slots), methods=["GET"]),
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
async def _models(state: ServeState, request: Request) -> Response:
    sch = state.scheduler
    meta = {"n_ctx_seq": sch.n_ctx_seq, "parallel": sch.n_slots, "path": state.scheduler.model.path.name}
    return JSONResponse(model_list(state.model_id, state.created, meta))


async def _model(state: ServeState, request: Request) -> Response:
    asked = request.path_params["model_id"]
    if asked != state.model_id:
        raise ApiError(404, f"The model {asked!r} is not served here; this server serves {state.model_id!r}.",
                       param="model", code="model_not_found")
    sch = state.scheduler
    meta = {"n_ctx_seq": sch.n_ctx_seq, "parallel": sch.n_slots, "path": sch.model.path.name}
    return JSONResponse(model_list(state.model_id, state.created, meta)["data"][0])  # type: ignore[index]


async def _root(state: ServeState, request: Request) -> Response:
    return JSONResponse({"status": "ok", "server": "prefill", "models": [state.model_id], "paths": ROUTES})


async def _slots(state: ServeState, request: Request) -> Response:
    return JSONResponse(state.scheduler.snapshot().as_dict())


async def _health(state: ServeState, request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _chat(state: ServeState, request: Request) -> Response:
    req = parse_chat(parse_json(await read_body(request, state.max_body)), state.model_id)
    if req.images:  # read and checked before anything is rendered; refused first when they cannot be
        messages = await attach_images(req.messages, req.images, state.scheduler.projector is not None,
                                       state.allow_remote_images, decoder=state.images, receive=request.receive)
        req = replace(req, messages=messages)
    return await _generate(state, request, req)


async def _completion(state: ServeState, request: Request) -> Response:
    req = parse_completion(parse_json(await read_body(request, state.max_body)), state.model_id)
    return await _generate(state, request, req)


async def _generate(state: ServeState, request: Request, req: GenerationRequest) -> Response:
    n_vocab = state.chat.runtime.n_vocab
    unknown = [t for t, _ in req.sampling.logit_bias if t >= n_vocab]
    if unknown:
        raise bad_request(f"'logit_bias' names token {unknown[0]}, which this model does not have "
                          f"(its tokens are 0 to {n_vocab - 1}).", "logit_bias")
    chat = req.chat_request if req.kind == "chat" else None  # the turn as every backend takes it, built once
    compacted: dict[str, object] | None = None
    if chat is not None and req.compaction == "auto":  # a conversation past the threshold goes on from a summary
        chat, compacted = await compact(state.scheduler, state.chat, state.waker(), chat, req.sampling,
                                        client_of(request))
    try:  # a schema that makes no grammar is the client's to fix; pricing it may take ~0.1 s: off the loop
        constraint = await anyio.to_thread.run_sync(state.chat.constraint, chat) if chat is not None else None
    except GrammarError as e:
        raise bad_request(str(e), "response_format" if req.tools.response_format else "tools") from None
    text, prompt = await _build_prompt(state, req, chat)
    reply = Reply(req.kind, req.model, extra={"compaction": compacted} if compacted else {})
    stream = EventStream(state.waker(), tokens=req.stream)
    stream.on_end = lambda m: note_tokens(request.scope, m.prompt_tokens, m.completion_tokens)
    sampling = req.sampling
    if req.kind == "chat":  # the chat format's turn markers end the answer, written as text too
        sampling = replace(sampling, stop=state.chat.stops(sampling))
    if sampling.max_tokens > state.scheduler.n_ctx_seq:
        sampling = replace(sampling, max_tokens=state.scheduler.n_ctx_seq)
    thinking = state.chat.thinking_limit(text, chat) if chat is not None else None
    handle = submit(state.scheduler, prompt, sampling, stream, reply.id, client_of(request), constraint, thinking)
    splitter = state.chat.reader(text, as_written=True, request=chat) if chat is not None else plain_reader()
    if req.stream:
        body = stream_reply(reply, handle, stream, splitter, req.include_usage)
        return EventSourceResponse(body, handle, state.write_deadline_s)
    return JSONResponse(await full_reply(reply, handle, stream, splitter, request))


async def _build_prompt(state: ServeState, req: GenerationRequest,
                        chat_request: ChatRequest | None) -> tuple[str, list[int]]:
    """The prompt's text and tokens (a chat's, or a completion's prompt), refused as soon as it cannot
    fit; a few are built at once."""
    bounds, chat = state.bounds, state.chat

    def build() -> tuple[str, list[int]]:
        text = chat.text_of(chat_request) if chat_request is not None else req.prompt
        bounds.check_text(text)
        if chat_request is None or not req.images:
            return text, chat.tokenize(text)
        images = images_of(chat_request.messages)
        return text, tokenize_with_images(text, True, chat.tokenize, images, state.scheduler.projector)

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


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 past `limit` bytes whether or not Content-Length says so."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise bad_request("Content-Length is not a number.")
        if int(declared) > limit:
            raise too_large(limit)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ApiError(499, "The client closed the request.") from None
    return b"".join(chunks)


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
