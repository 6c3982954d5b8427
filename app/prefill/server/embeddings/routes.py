"""Embeddings and reranking over HTTP: OpenAI's POST /v1/embeddings, and llama.cpp's POST /v1/rerank
(also at /v1/reranking, /rerank and /reranking, where llama.cpp answers it), over core.py.

Errors are OpenAI's shape, as llama.cpp's server writes them on these paths. A reply's JSON is written
on a worker thread in the embedding turn: 2,048 vectors of floats are a second of the GIL, which the
event loop must not hold.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio.to_thread
import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from prefill.server.cost_bounds import read_body
from prefill.server.dialect import Dialect, DialectRoute
from prefill.server.embeddings.core import Embedded, Reranked, embed_inputs, rerank_documents
from prefill.server.embeddings.parse import EncodingFormat, RerankBody, parse_embeddings, parse_rerank
from prefill.server.errors import server_error
from prefill.server.fields import parse_json, requested_model
from prefill.server.state import ServeState

LOOP_PARSE_BYTES = 64 * 1024  # a body up to this size is parsed on the event loop (under a millisecond)


async def embeddings(state: ServeState, request: Request) -> Response:
    obj = await parsed_body(await read_body(request, state.max_embed_body))
    name, keep_alive = requested_model(obj)
    body = parse_embeddings(obj)  # the whole body checked before any model loads for it
    done = await embed_inputs(state, name, body.inputs, truncate=body.truncate, keep_alive_s=keep_alive,
                              dimensions=body.dimensions, gone=request.is_disconnected)
    async with state.embed_turn():
        text = await anyio.to_thread.run_sync(embeddings_json, done, body.encoding_format)
    return Response(text, media_type="application/json")


async def rerank(state: ServeState, request: Request) -> Response:
    obj = await parsed_body(await read_body(request, state.max_embed_body))
    name, keep_alive = requested_model(obj)
    body = parse_rerank(obj)
    done = await rerank_documents(state, name, body.query, body.documents, truncate=body.truncate,
                                  keep_alive_s=keep_alive, gone=request.is_disconnected)
    return Response(rerank_json(done, body), media_type="application/json")


async def parsed_body(body: bytes) -> dict[str, Any]:
    """The body as JSON; a large one (megabytes of inputs: tens of milliseconds) parsed off the loop."""
    if len(body) <= LOOP_PARSE_BYTES:
        return parse_json(body)
    return await anyio.to_thread.run_sync(parse_json, body)


def embeddings_json(done: Embedded, encoding: EncodingFormat) -> bytes:
    """OpenAI's list of embeddings: floats, or base64 of little-endian float32 (what the OpenAI SDK sends
    for and decodes by default)."""
    rows = finite_rows(done)
    if encoding == "base64":
        data: list[object] = [base64.b64encode(r.tobytes()).decode("ascii") for r in rows]
    else:
        data = rows.tolist()
    return dumps({
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(data)],
        "model": done.model_id,
        "usage": {"prompt_tokens": done.prompt_tokens, "total_tokens": done.prompt_tokens},
    })


def finite_rows(done: Embedded) -> np.ndarray:
    """The vectors as little-endian float32 rows, each finite (JSON has no NaN).

    Raises:
        ApiError: 500 naming the model that gave a NaN or an infinity.
    """
    rows = done.vectors.astype("<f4", copy=False)
    if not np.isfinite(rows).all():
        raise server_error(f"The model {done.model_id!r} gave a vector that is not finite (NaN or infinity).")
    return rows


def rerank_json(done: Reranked, body: RerankBody) -> bytes:
    """llama.cpp's rerank reply: results most relevant first, `top_n` of them when asked."""
    results: list[dict[str, object]] = []
    for i, score in done.ranked(body.top_n):
        item: dict[str, object] = {"index": i, "relevance_score": score if np.isfinite(score) else None}
        if body.return_documents:
            item["document"] = {"text": body.documents[i]}
        results.append(item)
    return dumps({"model": done.model_id, "object": "list",
                   "usage": {"prompt_tokens": done.prompt_tokens, "total_tokens": done.prompt_tokens},
                   "results": results})


def dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


DIALECT = Dialect("embeddings", (
    DialectRoute("POST", "/v1/embeddings", embeddings),
    *(DialectRoute("POST", path, rerank) for path in ("/v1/rerank", "/v1/reranking", "/rerank", "/reranking")),
))
