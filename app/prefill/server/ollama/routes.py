"""Ollama's routes over the core: POST /api/chat and /api/generate (NDJSON streams unless `"stream":
false`), POST /api/embed and /api/embeddings (embed.py), GET /api/tags, GET /api/ps, POST /api/show, GET
/api/version. Errors are `{"error": "..."}` with the status saying what kind. A model is named as the
pool names it ("NAME:latest" too); `keep_alive` is the pool's own (how long the model stays once idle;
0: unloaded when its requests end), and a request without messages or prompt only loads the model, or
with `keep_alive` 0 unloads it.
"""

from __future__ import annotations

import time
import uuid

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from prefill.engine.errors import EngineError
from prefill.pool.errors import ModelBusy
from prefill.server.core import GenerationRequest, start, with_images
from prefill.server.cost_bounds import read_body
from prefill.server.dialect import Dialect, DialectRoute
from prefill.server.errors import ApiError, bad_request
from prefill.server.fields import get_bool, parse_json, requested_model
from prefill.server.ollama import embed, models
from prefill.server.ollama.errors import ollama_error
from prefill.server.ollama.parse import load_only, parse_chat, parse_generate
from prefill.server.ollama.replies import NDJSON, OllamaLines, OllamaReply, full_reply
from prefill.server.state import ServeState, pool_error
from prefill.server.stream_body import stream_response

SHOW_BODY = 16 * 1024  # a name and a flag


async def chat(state: ServeState, request: Request) -> Response:
    started = time.perf_counter()
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_chat(obj, name)  # the whole body checked before any model loads for it
    return await _answer(state, request, req, OllamaReply(True, name, started), keep_alive)


async def generate(state: ServeState, request: Request) -> Response:
    started = time.perf_counter()
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_generate(obj, name)
    return await _answer(state, request, req, OllamaReply(False, name, started), keep_alive)


async def _answer(state: ServeState, request: Request, req: GenerationRequest, reply: OllamaReply,
                  keep_alive: float | None) -> Response:
    model = models.pool_name(state, req.model)
    if load_only(req):
        return JSONResponse(reply.loaded(await _load(state, model, keep_alive)))
    with await state.lease(model, keep_alive) as lease:
        served = state.served(lease.resident)
        if req.options.think and not served.chat.reasoning:
            raise bad_request(f"{req.model!r} does not support thinking: its answers have no reasoning markers.",
                              "think")
        req = await with_images(served, state, request, req)
        reply.load_ms = lease.load_ms
        gen = await start(served, lease, request, req, f"ollama-{uuid.uuid4().hex[:12]}", state)
    if req.stream:
        return stream_response(OllamaLines(reply, gen), state.write_deadline_s, NDJSON)
    return JSONResponse(await full_reply(reply, gen, request))


async def _load(state: ServeState, name: str, keep_alive: float | None) -> str:
    """Load the model (done_reason "load"), or with keep_alive 0 unload it ("unload"): now when it is idle,
    else as soon as its requests end (a pinned one, which no time to live unloads, is refused while it
    serves). A model not loaded is not loaded to be unloaded."""
    if keep_alive != 0:
        (await state.lease(name, keep_alive)).release()
        return "load"
    try:
        model_id = state.pool.id_of(name)
        await anyio.to_thread.run_sync(state.pool.unload, model_id)
    except ModelBusy:  # serving or loading: its time to live is 0 from its last request's end
        if any(st.pinned for st in state.pool.statuses() if st.id == model_id):  # no time to live unloads it
            raise ApiError(409, f"The model {model_id!r} is pinned and serving requests: send keep_alive 0 again "
                                "once they end.", param="model", code="model_busy") from None
        (await state.lease(model_id, 0.0)).release()
    except EngineError as e:
        raise pool_error(e) from None
    return "unload"


async def tags(state: ServeState, request: Request) -> Response:
    return JSONResponse(await models.tags(state))


async def ps(state: ServeState, request: Request) -> Response:
    return JSONResponse(await models.ps(state))


async def show(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, SHOW_BODY))
    name = obj.get("model", obj.get("name"))  # "name": the older clients'
    if not isinstance(name, str) or not name:
        raise bad_request("'model' is required (see GET /api/tags).", "model")
    get_bool(obj, "verbose", False)  # arrays (the vocabulary) are left out either way
    return JSONResponse(await models.show(state, name))


async def version(state: ServeState, request: Request) -> Response:
    return JSONResponse({"version": models.OLLAMA_VERSION})


DIALECT = Dialect("ollama", (
    DialectRoute("POST", "/api/chat", chat),
    DialectRoute("POST", "/api/generate", generate),
    DialectRoute("POST", "/api/embed", embed.embed),
    DialectRoute("POST", "/api/embeddings", embed.embeddings),
    DialectRoute("GET", "/api/tags", tags),
    DialectRoute("GET", "/api/ps", ps),
    DialectRoute("POST", "/api/show", show),
    DialectRoute("GET", "/api/version", version),
), error_body=ollama_error, prefixes=("/api",))
