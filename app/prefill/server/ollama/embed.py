"""Ollama's POST /api/embed (and the older POST /api/embeddings) over the dialect-free embeddings core
(server/embeddings/core.py), so its bounds, its one embedding turn and its refusals are the same as
OpenAI's /v1/embeddings.

/api/embed: `input` (a text or a list of texts), `truncate` (Ollama's default: true, an input past the
model's context is cut to fit; false refuses it), `dimensions`, `keep_alive` → `embeddings` (unit
length), `prompt_eval_count`, and `total_duration` and `load_duration` in nanoseconds, measured.
/api/embeddings: `prompt` → `embedding`, as Ollama's first embedding route answered.
"""

from __future__ import annotations

import time

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from prefill.server.cost_bounds import read_body
from prefill.server.embeddings.core import Embedded, embed_inputs
from prefill.server.embeddings.routes import dumps, finite_rows, parsed_body
from prefill.server.errors import bad_request
from prefill.server.fields import get_bool, get_int, requested_model
from prefill.server.ollama import models
from prefill.server.state import ServeState


async def embed(state: ServeState, request: Request) -> Response:
    started = time.perf_counter()
    obj = await parsed_body(await read_body(request, state.max_embed_body))
    name, keep_alive = requested_model(obj)
    raw = obj.get("input")
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
        raise bad_request("'input' is required: a text or a list of texts.", "input")
    if not inputs:  # as Ollama answers it: the model loaded, no vector
        with await state.lease(models.pool_name(state, name), keep_alive, kind="embedding") as lease:
            return Response(dumps({"model": lease.resident.id, "embeddings": [],
                                   "total_duration": int((time.perf_counter() - started) * 1e9),
                                   "load_duration": int(lease.load_ms * 1e6), "prompt_eval_count": 0}),
                            media_type="application/json")
    done = await embed_inputs(state, models.pool_name(state, name), inputs, truncate=get_bool(obj, "truncate", True),
                              keep_alive_s=keep_alive, dimensions=get_int(obj, "dimensions", None, 1),
                              gone=request.is_disconnected)
    async with state.embed_turn():
        text = await anyio.to_thread.run_sync(_embed_json, done, started)
    return Response(text, media_type="application/json")


async def embeddings(state: ServeState, request: Request) -> Response:
    obj = await parsed_body(await read_body(request, state.max_embed_body))
    name, keep_alive = requested_model(obj)
    prompt = obj.get("prompt")
    if not isinstance(prompt, str):
        raise bad_request("'prompt' is required: the text to embed.", "prompt")
    if not prompt:  # as Ollama answers it: no vector
        (await state.lease(models.pool_name(state, name), keep_alive, kind="embedding")).release()
        return Response(dumps({"embedding": []}), media_type="application/json")
    done = await embed_inputs(state, models.pool_name(state, name), [prompt], truncate=True,
                              keep_alive_s=keep_alive, gone=request.is_disconnected)
    return Response(dumps({"embedding": finite_rows(done)[0].tolist()}), media_type="application/json")


def _embed_json(done: Embedded, started: float) -> bytes:
    return dumps({
        "model": done.model_id,
        "embeddings": finite_rows(done).tolist(),
        "total_duration": int((time.perf_counter() - started) * 1e9),
        "load_duration": int(done.load_ms * 1e6),
        "prompt_eval_count": done.prompt_tokens,
    })
