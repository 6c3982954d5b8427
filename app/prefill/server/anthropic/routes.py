"""Anthropic's routes: POST /v1/messages (whole or streamed; `?beta=true` as well) and
POST /v1/messages/count_tokens, exact (the model's own template and tokenizer), over the core.
`anthropic-version` and `anthropic-beta` are accepted and not needed; the key may come as
`x-api-key` (routes.py's door reads it)."""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from prefill.server.anthropic.errors import anthropic_error
from prefill.server.anthropic.parse import parse_messages
from prefill.server.anthropic.replies import MessageReply, full_reply, stream_reply
from prefill.server.core import GenerationRequest, build_prompt, start
from prefill.server.cost_bounds import read_body
from prefill.server.dialect import Dialect, DialectRoute
from prefill.server.fields import parse_json, requested_model
from prefill.server.generate import EventSourceResponse
from prefill.server.images import attach_images
from prefill.server.state import ServedModel, ServeState


async def messages(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_messages(obj, name)  # the whole body checked before any model loads for it
    with await state.lease(name, keep_alive) as lease:
        served = state.served(lease.resident)
        req = await _with_images(served, state, request, req)
        reply = MessageReply(lease.resident.id, req.sampling.stop)
        gen = await start(served, lease, request, req, reply.id)
    if req.stream:
        return EventSourceResponse(stream_reply(reply, gen), gen.handle, state.write_deadline_s)
    return JSONResponse(await full_reply(reply, gen, request))


async def count_tokens(state: ServeState, request: Request) -> Response:
    obj = parse_json(await read_body(request, state.max_body))
    name, keep_alive = requested_model(obj)
    req = parse_messages(obj, name, counting=True)
    with await state.lease(name, keep_alive) as lease:
        served = state.served(lease.resident)
        req = await _with_images(served, state, request, req)
        _, prompt = await build_prompt(served, req, req.chat_request)
    return JSONResponse({"input_tokens": len(prompt)})


async def _with_images(served: ServedModel, state: ServeState, request: Request,
                       req: GenerationRequest) -> GenerationRequest:
    """The request with its images read and checked (refused in words for a model without a projector)."""
    if not req.images:
        return req
    messages = await attach_images(req.messages, req.images, served.scheduler.projector is not None,
                                   state.allow_remote_images, decoder=state.images, receive=request.receive)
    return replace(req, messages=messages)


DIALECT = Dialect("anthropic", (
    DialectRoute("POST", "/v1/messages", messages),
    DialectRoute("POST", "/v1/messages/count_tokens", count_tokens),
), error_body=anthropic_error, prefixes=("/v1/messages",))
