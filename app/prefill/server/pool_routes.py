"""The routes about the models themselves: what the pool holds, and loading and unloading by hand.

GET /v1/models (every model of the pool with its state and size: loaded, loading, not loaded,
unusable), GET /v1/models/{id}, and llama.cpp's router names: GET /models (with memory use),
POST /models/load and POST /models/unload ({"model": ID}). GET /slots: every resident model's
slots, each marked with its model, and each model's snapshot under `models`; the prompt caches of
every model added up under `prompt_cache`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, cast

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from prefill.engine.batch.prompt_cache import PromptCacheSnapshot
from prefill.engine.errors import EngineError
from prefill.pool.embed_model import EmbedModel
from prefill.pool.pool import ModelStatus, Resident
from prefill.server.cost_bounds import read_body
from prefill.server.errors import bad_request, model_not_found
from prefill.server.fields import parse_json, requested_model
from prefill.server.openai.shapes import model_list
from prefill.server.state import ServeState, pool_error

CONTROL_BODY = 16 * 1024  # a load or unload body: a name and two fields


def model_object(state: ServeState, st: ModelStatus, resident: Resident | None) -> dict[str, object]:
    """One model as /v1/models lists it: OpenAI's fields, and its state, size and memory."""
    meta: dict[str, object] = {"path": st.path}
    if resident is not None and resident.kind == "chat":
        served = state.served(resident)
        meta.update(n_ctx_seq=served.scheduler.n_ctx_seq, parallel=served.scheduler.n_slots)
    elif resident is not None:  # an embedding or reranking model: its vectors' size and longest input
        embed = cast(EmbedModel, resident.model).model
        meta.update(n_embd=embed.n_embd, n_ctx=embed.n_ctx, pooling=embed.pooling)
    return {"id": st.id, "object": "model", "created": state.created, "owned_by": "prefill", "state": st.state,
            "kind": st.kind, "size": st.size, "memory": st.memory.total if st.memory else None, "meta": meta}


def status_object(st: ModelStatus) -> dict[str, object]:
    """One model as GET /models lists it (llama.cpp's router: `status.value`), with what it takes."""
    value = {"loaded": "loaded", "loading": "loading", "not loaded": "unloaded", "unusable": "failed"}[st.state]
    return {"id": st.id, "state": st.state, "status": {"value": value}, "kind": st.kind, "path": st.path,
            "size": st.size, "memory": st.memory.as_dict() if st.memory else None, "in_flight": st.in_flight,
            "pinned": st.pinned, "aliases": list(st.aliases), "expires_at": st.expires_at, "error": st.error,
            "loads": st.loads}


def _residents(state: ServeState) -> dict[str, Resident]:
    return {r.id: r for r in state.pool.residents()}


async def models(state: ServeState, request: Request) -> Response:
    residents = _residents(state)
    return JSONResponse(model_list([model_object(state, st, residents.get(st.id))
                                    for st in state.pool.statuses()]))


async def model(state: ServeState, request: Request) -> Response:
    asked = request.path_params["model_id"]
    residents = _residents(state)
    for st in state.pool.statuses():
        if st.id == asked or asked in st.aliases:
            return JSONResponse(model_object(state, st, residents.get(st.id)))
    raise model_not_found(asked, state.pool.ids())


async def pool_models(state: ServeState, request: Request) -> Response:
    pool = state.pool
    return JSONResponse({"object": "list", "data": [status_object(st) for st in pool.statuses()],
                         "memory": {"budget": pool.limits.budget or None, "used": pool.used()},
                         "max_models": pool.limits.max_models or None, "ttl_s": pool.limits.ttl_s,
                         "default_model": pool.default_model or None})


async def _control_body(request: Request) -> tuple[dict[str, Any], str, float | None]:
    obj = parse_json(await read_body(request, CONTROL_BODY))
    name, keep_alive = requested_model(obj)
    pinned = obj.get("pinned")
    if pinned is not None and not isinstance(pinned, bool):
        raise bad_request("'pinned' must be true or false.", "pinned")
    return obj, name, keep_alive


def _status_of(state: ServeState, model_id: str) -> dict[str, object]:
    return next(status_object(st) for st in state.pool.statuses() if st.id == model_id)


async def load(state: ServeState, request: Request) -> Response:
    """POST /models/load {"model", "pinned"?, "keep_alive"?}: load now (waits for the load)."""
    obj, name, keep_alive = await _control_body(request)
    try:
        model_id = state.pool.id_of(name)  # no default model here: a load names what it loads
        lease = await state.lease(model_id, keep_alive, kind=None)
        lease.release()
        if obj.get("pinned") is not None:
            state.pool.pin(model_id, bool(obj["pinned"]))
    except EngineError as e:
        raise pool_error(e) from None
    return JSONResponse({"success": True, "load_ms": round(lease.load_ms, 3), "model": _status_of(state, model_id)})


async def unload(state: ServeState, request: Request) -> Response:
    """POST /models/unload {"model"}: unload now; 409 while it generates or has requests queued."""
    _, name, _ = await _control_body(request)
    try:
        model_id = state.pool.id_of(name)
        was = await anyio.to_thread.run_sync(state.pool.unload, model_id)
    except EngineError as e:
        raise pool_error(e) from None
    return JSONResponse({"success": True, "was_loaded": was, "model": _status_of(state, model_id)})


async def slots(state: ServeState, request: Request) -> Response:
    """Every resident chat model's snapshot under `models`; at the top, all their slots (each with its
    model) and their counts added up, so a one-model server answers as it always has."""
    per: dict[str, dict[str, Any]] = {}
    for r in state.pool.residents():
        if r.kind == "chat":
            per[r.id] = state.served(r).scheduler.snapshot().as_dict()
    total: dict[str, Any] = {"slots": [], "queued": 0, "aggregate_tps": 0.0, "n_ctx_seq": 0, "served": 0,
                             "cancelled": 0, "steps": 0, "peak_batch_seqs": 0, "peak_queued": 0,
                             "speculative": "off", "draft_n": 0, "draft_n_accepted": 0, "busy": 0, "in_flight": 0}
    for model_id, snap in per.items():
        total["slots"] += [{**s, "model": model_id} for s in snap["slots"]]
        for k in ("queued", "aggregate_tps", "served", "cancelled", "steps", "draft_n", "draft_n_accepted", "busy",
                  "in_flight"):
            total[k] += snap[k]
        for k in ("n_ctx_seq", "peak_batch_seqs", "peak_queued"):
            total[k] = max(total[k], snap[k])
        if snap["speculative"] != "off":
            total["speculative"] = snap["speculative"]
    caches = [snap["prompt_cache"] for snap in per.values()]
    total["prompt_cache"] = {k: sum(c[k] for c in caches) for k in asdict(PromptCacheSnapshot()) if k != "note"}
    total["prompt_cache"]["note"] = next((c["note"] for c in caches if c["note"]), "")
    total["models"] = per
    return JSONResponse(total)
