"""Anthropic's routes: POST /v1/messages (whole or streamed; `?beta=true` as well) and
POST /v1/messages/count_tokens, exact (the model's own template and tokenizer), over the core. A count
whose body names a collection (`documents`) counts what /v1/messages would send: the passages found put in,
or the search tool offered.
`anthropic-version` and `anthropic-beta` are accepted and not needed; the key may come as
`x-api-key` (routes.py's door reads it)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from prefill.server.anthropic.errors import anthropic_error
from prefill.server.anthropic.parse import parse_messages
from prefill.server.anthropic.replies import MessageEvents, MessageReply, full_reply
from prefill.server.core import build_prompt, start, with_documents, with_images
from prefill.server.cost_bounds import read_body
from prefill.server.dialect import Dialect, DialectRoute
from prefill.server.fields import parse_json, requested_model
from prefill.server.state import ServeState
from prefill.server.stream_body import stream_response


async def messages(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_messages(obj, name)  # the whole body checked before any model loads for it
    with await state.lease(name, keep_alive) as lease:
        served = state.served(lease.resident)
        req = await with_images(served, state, request, req)
        reply = MessageReply(lease.resident.id, req.sampling.stop)
        gen = await start(served, lease, request, req, reply.id, state)
    if req.stream:
        return stream_response(MessageEvents(reply, gen), state.write_deadline_s)
    return JSONResponse(await full_reply(reply, gen, request))


async def count_tokens(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_messages(obj, name, counting=True)
    with await state.lease(name, keep_alive) as lease:
        served = state.served(lease.resident)
        req = await with_images(served, state, request, req)
        if req.documents is not None:  # what the answer's request would send: the passages put in
            req, _ = await with_documents(state, served, req)
        _, prompt = await build_prompt(served, req, req.chat_request)
    return JSONResponse({"input_tokens": len(prompt)})


DIALECT = Dialect("anthropic", (
    DialectRoute("POST", "/v1/messages", messages),
    DialectRoute("POST", "/v1/messages/count_tokens", count_tokens),
), error_body=anthropic_error, prefixes=("/v1/messages",))
