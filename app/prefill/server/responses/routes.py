"""The Responses API's routes over the core: POST /v1/responses (whole or streamed), and GET and
DELETE /v1/responses/{id} for a kept response. Errors are in OpenAI's shape (the server's default)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from prefill.server.core import client_of, start, with_images
from prefill.server.cost_bounds import read_body
from prefill.server.dialect import Dialect, DialectRoute
from prefill.server.errors import ApiError
from prefill.server.fields import parse_json, requested_model
from prefill.server.responses.parse import parse_responses
from prefill.server.responses.replies import Keep, ResponseEvents, ResponseReply, full_reply
from prefill.server.state import ServeState
from prefill.server.stream_body import stream_response

MAX_KEPT_BYTES = 16 * 2**20  # a kept conversation's JSON that a request may go on from and keep again


async def create(state: ServeState, request: Request) -> Response:
    raw = await read_body(request, state.max_body)
    obj = parse_json(raw)
    name, keep_alive = requested_model(obj)
    ask = parse_responses(obj, name)  # the whole body checked before any model loads for it
    owner = client_of(request)
    history: list[Any] = []
    if ask.previous is not None:
        stored = await state.responses.get(ask.previous, owner)
        if stored is None:
            raise not_found(ask.previous, "previous_response_id")
        if ask.store:
            check_kept_growth(ask.previous, stored.size, len(raw))
        history = [*stored.input, *stored.body.get("output", [])]
    req = ask.request(history)
    # Leased until the reply is written, not only until it is submitted: the thinking's tokens are
    # counted with the model's tokenizer once the answer has ended.
    lease = await state.lease(name, keep_alive)
    try:
        served = state.served(lease.resident)
        req = await with_images(served, state, request, req)
        count = served.chat.tokenize
        reply = ResponseReply(lease.resident.id, ask.echo, ask.store, lambda text: len(count(text, False)))
        gen = await start(served, lease, request, req, reply.id, state)
    except BaseException:
        lease.release()
        raise
    kept_input = [*history, *ask.input]  # a continued response keeps the whole conversation: one read goes on

    async def kept(body: dict[str, Any]) -> None:
        await state.responses.save(reply.id, owner, kept_input, body)
    keep: Keep | None = kept if ask.store else None
    if req.stream:
        return stream_response(ResponseEvents(reply, gen, keep), state.write_deadline_s, on_close=lease.release)
    try:
        body = await full_reply(reply, gen, request)
    finally:
        lease.release()
    if keep is not None:
        await keep(body)
    return JSONResponse(body)


async def retrieve(state: ServeState, request: Request) -> Response:
    response_id = request.path_params["response_id"]
    stored = await state.responses.get(response_id, client_of(request)) if _plain(response_id) else None
    if stored is None:
        raise not_found(response_id)
    return JSONResponse(stored.body)


async def delete(state: ServeState, request: Request) -> Response:
    response_id = request.path_params["response_id"]
    if not _plain(response_id) or not await state.responses.delete(response_id, client_of(request)):
        raise not_found(response_id)
    return JSONResponse({"id": response_id, "object": "response", "deleted": True})


def check_kept_growth(previous: str, kept: int, body: int, limit: int = MAX_KEPT_BYTES) -> None:
    """A kept conversation of `kept` bytes goes on by a body of `body` bytes and is kept again (each step
    keeps it whole): refused past `limit`, so no chain of requests grows the history database without end.

    Raises:
        ApiError: 400 `conversation_too_large`, saying how to go on.
    """
    if kept + body > limit:
        raise ApiError(400, f"The conversation kept under {previous[:80]!r} holds {kept >> 20} MiB; one that goes "
                            f"on past {limit >> 20} MiB is not kept again. Send \"store\": false to go on without "
                            "keeping it, or start a new one.", param="previous_response_id",
                       code="conversation_too_large")


def not_found(response_id: str, param: str | None = None) -> ApiError:
    """A response that is not kept (never stored, deleted, past the bound, or another key's)."""
    said = "Previous response" if param else "Response"
    return ApiError(404, f"{said} with id {response_id[:80]!r} not found.", param=param, code="response_not_found")


def _plain(response_id: str) -> bool:
    """An id that could be one (a path may carry what is not valid Unicode)."""
    try:
        response_id.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return 0 < len(response_id) <= 256


DIALECT = Dialect("responses", (
    DialectRoute("POST", "/v1/responses", create),
    DialectRoute("GET", "/v1/responses/{response_id}", retrieve),
    DialectRoute("DELETE", "/v1/responses/{response_id}", delete),
), prefixes=("/v1/responses",))
