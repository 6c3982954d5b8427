"""OpenAI's routes: POST /v1/chat/completions and /v1/completions, over the core."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from prefill.pool.pool import Lease
from prefill.server.core import GenerationRequest, start, with_images
from prefill.server.cost_bounds import read_body
from prefill.server.dialect import Dialect, DialectRoute
from prefill.server.openai.parse import parse_chat, parse_completion, parse_json, requested_model
from prefill.server.openai.replies import ChatChunks, full_reply
from prefill.server.openai.shapes import Reply
from prefill.server.state import ServedModel, ServeState
from prefill.server.stream_body import stream_response


async def chat(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_chat(obj, name)  # the whole body checked before any model loads for it
    with await state.lease(name, keep_alive) as lease:
        served = state.served(lease.resident)
        req = await with_images(served, state, request, req)  # read and checked before anything is rendered
        return await _answer(served, lease, state, request, req)


async def completion(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_completion(obj, name)
    with await state.lease(name, keep_alive) as lease:
        return await _answer(state.served(lease.resident), lease, state, request, req)


async def _answer(served: ServedModel, lease: Lease, state: ServeState, request: Request,
                  req: GenerationRequest) -> Response:
    reply = Reply(req.kind, lease.resident.id, load_ms=lease.load_ms)
    gen = await start(served, lease, request, req, reply.id, state)
    if gen.compacted:
        reply.extra["compaction"] = gen.compacted
    if req.stream:
        return stream_response(ChatChunks(reply, gen, req.include_usage), state.write_deadline_s)
    return JSONResponse(await full_reply(reply, gen, request))


DIALECT = Dialect("openai", (
    DialectRoute("POST", "/v1/chat/completions", chat),
    DialectRoute("POST", "/v1/completions", completion),
))
