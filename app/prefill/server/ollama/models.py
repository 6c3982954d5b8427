"""The pool's catalogue as Ollama shows it: GET /api/tags (every model the server can serve), GET /api/ps
(the resident ones, their memory and when they expire), POST /api/show (a model's details, its GGUF
header's keys, its chat template and what it can do), GET /api/version.

What a model is comes from its GGUF header, read off the event loop once per file version (its path,
size and modification time): family (`general.architecture`), parameter size, quantization, context
length. Its `digest` names that file version (a hash of path, size and time: hashing gigabytes to
list them would cost seconds), so it changes when the file does. Capabilities are what Prefill can
do with the model: "completion" and "tools" for every chat model (a template that renders no tools
gets them described in words), "thinking" for one whose answers have reasoning markers (the loaded
model's own syntax; before a load, the markers its template writes), "vision" with a projector,
"embedding" for an embedding model.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import anyio.to_thread

from prefill.engine.gguf.header import GGUFError, read_header
from prefill.engine.prompt.reasoning import detect_syntax
from prefill.engine.units import format_params
from prefill.pool.catalogue import ModelEntry
from prefill.pool.errors import UnknownModel
from prefill.pool.pool import ModelStatus, Resident
from prefill.server.errors import model_not_found
from prefill.server.state import ServeState

# The Ollama release whose API this dialect answers as (clients gate features such as `think` by it).
OLLAMA_VERSION = "0.12.0"
FOREVER = "2318-01-01T00:00:00Z"  # expires_at of a model kept until unloaded (Ollama's, for keep_alive < 0)
TAG = ":latest"  # Ollama's default tag: "name:latest" is "name"


@dataclass(frozen=True)
class HeaderFacts:
    """What the GGUF header of one file version says, as Ollama's `details` and `model_info` give it."""

    family: str = ""
    parameters: int = 0
    quantization: str = ""
    context_length: int = 0
    template: str = ""
    info: tuple[tuple[str, Any], ...] = ()  # the header's keys, arrays and non-finite numbers as null
    error: str = ""  # why the header could not be read


def pool_name(state: ServeState, name: str) -> str:
    """The name to ask the pool for: "NAME:latest" is NAME when the pool knows NAME and not "NAME:latest"
    (any other name as it is, so the default model still answers one the pool lacks)."""
    if name.endswith(TAG):
        for candidate in (name, name.removesuffix(TAG)):
            try:
                return state.pool.id_of(candidate)
            except UnknownModel:
                continue
    return name


def model_id(state: ServeState, name: str) -> str:
    """The pool's id for `name` (an id, an alias, "NAME:latest"); a 404 naming the models otherwise."""
    try:
        return state.pool.id_of(pool_name(state, name))
    except UnknownModel:
        raise model_not_found(name, state.pool.ids()) from None


def entries(state: ServeState) -> list[ModelEntry]:
    """Every model the server can serve (an unusable file is not one)."""
    return [e for e in (state.pool.resolve(i) for i in state.pool.ids()) if not e.unusable]


async def facts_of(entry: ModelEntry) -> HeaderFacts:
    stamp = _stamp(entry.path)
    return await anyio.to_thread.run_sync(_facts, str(entry.path), *stamp)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return 0, 0
    return st.st_size, st.st_mtime_ns


@lru_cache(maxsize=256)
def _facts(path: str, size: int, mtime_ns: int) -> HeaderFacts:
    """The header's facts, once per file version (`size`, `mtime_ns` key the cache)."""
    try:
        h = read_header(path)
    except GGUFError as e:
        return HeaderFacts(error=str(e))
    info = {k: _shown(v) for k, v in h.metadata.items() if k != "tokenizer.chat_template"}
    info["general.parameter_count"] = h.n_params
    return HeaderFacts(h.architecture, h.n_params, h.quantization, h.context_length, h.chat_template or "",
                       tuple(info.items()))


def _shown(v: Any) -> Any:
    """A header value as JSON can carry it: arrays left out (Ollama's `verbose` off), NaN as null."""
    if isinstance(v, list):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def digest(entry: ModelEntry) -> str:
    size, mtime_ns = _stamp(entry.path)
    return hashlib.sha256(f"{entry.path}\0{size}\0{mtime_ns}".encode("utf-8", "surrogateescape")).hexdigest()


def modified_at(entry: ModelEntry) -> str:
    _, mtime_ns = _stamp(entry.path)
    return datetime.fromtimestamp(mtime_ns / 1e9, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def details(f: HeaderFacts) -> dict[str, Any]:
    return {"parent_model": "", "format": "gguf", "family": f.family, "families": [f.family] if f.family else None,
            "parameter_size": format_params(f.parameters), "quantization_level": f.quantization}


async def tag(entry: ModelEntry) -> dict[str, Any]:
    """One model as /api/tags lists it."""
    return {"name": entry.id, "model": entry.id, "modified_at": modified_at(entry), "size": entry.size,
            "digest": digest(entry), "details": details(await facts_of(entry))}


async def tags(state: ServeState) -> dict[str, Any]:
    return {"models": [await tag(e) for e in entries(state)]}


def expires_at(state: ServeState, st: ModelStatus, r: Resident) -> str:
    """When the model is unloaded if it stays idle: the pool's time, or (while it serves) its time to live
    from now; a pinned model, or one kept until unloaded, never."""
    when = st.expires_at
    if when is None and not st.pinned:
        ttl = r.keep_alive_s if r.keep_alive_s is not None else state.pool.limits.ttl_s
        when = None if ttl is None or ttl < 0 else time.time() + ttl
    if when is None:
        return FOREVER
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


async def ps(state: ServeState) -> dict[str, Any]:
    """The resident models: their memory (`size_vram` the part on a GPU), context and expiry."""
    residents = {r.id: r for r in state.pool.residents()}
    out = []
    for st in state.pool.statuses():
        r = residents.get(st.id)
        if r is None:
            continue
        size = r.memory.total
        vram, context = 0, 0
        if r.kind == "chat":
            served = state.served(r)
            off = served.scheduler.runtime.offload
            vram = int(size * min(1.0, off.gpu_layers / off.total_layers)) if off.total_layers else 0
            context = served.scheduler.n_ctx_seq
        entry = r.entry
        out.append({"name": entry.id, "model": entry.id, "size": size, "digest": digest(entry),
                    "details": details(await facts_of(entry)), "expires_at": expires_at(state, st, r),
                    "size_vram": vram, "context_length": context})
    return {"models": out}


def capabilities(state: ServeState, entry: ModelEntry, f: HeaderFacts) -> list[str]:
    if entry.kind != "chat":  # an embedding model, or a reranker (which Ollama has no word for): no chat
        return ["embedding"] if entry.kind == "embedding" else []
    out = ["completion", "tools"]
    r = state.pool.resident(entry.id)
    if r is not None and r.kind == "chat":
        thinks = bool(state.served(r).chat.reasoning)
    else:
        thinks = bool(detect_syntax(f.template, lambda _: False))
    if thinks:
        out.append("thinking")
    if entry.projector is not None:
        out.append("vision")
    return out


async def show(state: ServeState, name: str) -> dict[str, Any]:
    """One model as /api/show describes it."""
    entry = state.pool.resolve(model_id(state, name))
    f = await facts_of(entry)
    return {"modelfile": f"# Served by Prefill from {entry.path.name}\nFROM {entry.path.name}\n", "parameters": "",
            "template": f.template, "details": details(f), "model_info": dict(f.info),
            "capabilities": capabilities(state, entry, f), "modified_at": modified_at(entry)}
