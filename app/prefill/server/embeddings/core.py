"""Embeddings and reranking without a dialect: a model resolved through the pool, inputs checked
against the cost bounds, tokenized and evaluated off the event loop, tokens counted by the model's
own tokenizer.

`embed_inputs` serves OpenAI's POST /v1/embeddings here and any other dialect's (Ollama's /api/embed)
the same way; `rerank_documents` serves POST /v1/rerank. Each resolves `name` as a chat request does
(an id, an alias, the default model; a 404 lists the ids), refuses a model of another kind in words
before anything loads, and holds its lease until the last vector is out, so the pool never unloads
the model under it.

The work runs on a worker thread and takes the server's one embedding turn (`ServeState.embed_turn`)
for each step: tokenizing every input, then evaluating them EMBED_PART at a time. So an embedding
request never blocks the event loop, at most one thread works for embeddings at a time beside the chat
schedulers' own, and a large request's parts interleave with smaller requests'.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar, cast

import anyio.to_thread
import numpy as np

from prefill.engine.embed.errors import InputTooLong
from prefill.engine.embed.model import BadInput, EmbeddingModel
from prefill.engine.errors import EngineError
from prefill.pool.embed_model import EmbedModel
from prefill.pool.pool import Lease
from prefill.server.cost_bounds import EMBED_MAX_INPUTS, EMBED_MAX_TOKENS, EMBED_PART
from prefill.server.errors import ApiError, bad_request, context_exceeded, server_error
from prefill.server.fields import unicode_text
from prefill.server.state import ServeState

Input = str | Sequence[int]  # a text, or token ids used as given (no framing added)
Gone = Callable[[], Awaitable[bool]]  # whether the request's client has left
T = TypeVar("T")


@dataclass(frozen=True)
class _Made:
    """What a call made, besides its result.

    Attributes:
        model_id: the model that made it (the id, whatever name the request gave).
        tokens: each input's tokens as the model read it (framing included, after any cut).
        load_ms: how long the request waited for the model to load (0 when it was resident).
        total_ms: the whole call, the load included.
    """

    model_id: str
    tokens: tuple[int, ...]
    load_ms: float
    total_ms: float

    @property
    def prompt_tokens(self) -> int:
        return sum(self.tokens)


@dataclass(frozen=True)
class Embedded(_Made):
    """What `embed_inputs` made: `vectors`, one row per input, in order: float32, unit length unless asked
    otherwise."""

    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))


@dataclass(frozen=True)
class Reranked(_Made):
    """What `rerank_documents` made: each document's score (the reranker's raw output, higher is more
    relevant), in the documents' order."""

    scores: tuple[float, ...] = ()

    def ranked(self, top_n: int | None = None) -> list[tuple[int, float]]:
        """(index, score), the most relevant first (ties in the documents' order), `top_n` at most."""
        order = sorted(range(len(self.scores)), key=lambda i: (-self.scores[i], i))
        return [(i, self.scores[i]) for i in order[:top_n]]


def check_inputs(inputs: Sequence[Input], param: str = "input") -> None:
    """The bounds a request's inputs must keep before any model is leased: at least one, at most
    EMBED_MAX_INPUTS, none empty, texts valid Unicode, token ids integers.

    Raises:
        ApiError: 400 naming `param` and the input.
    """
    if not inputs:
        raise bad_request(f"'{param}' holds no input: give a text, a list of texts, or token arrays.", param)
    if len(inputs) > EMBED_MAX_INPUTS:
        raise bad_request(f"'{param}' holds {len(inputs)} inputs; at most {EMBED_MAX_INPUTS} are embedded in one "
                          "request. Send them in several.", param)
    what = "Document" if param == "documents" else "Input"
    for i, x in enumerate(inputs):
        if isinstance(x, str):
            if not x:
                raise bad_request(f"{what} {i} is an empty text: there is nothing to embed.", param)
            unicode_text(x, param)
        elif not x:
            raise bad_request(f"{what} {i} is an empty list of tokens: there is nothing to embed.", param)
        elif any(isinstance(t, bool) or not isinstance(t, int) for t in x):
            raise bad_request(f"{what} {i} holds a token id that is not an integer.", param)


async def embed_inputs(state: ServeState, name: str, inputs: Sequence[Input], *, truncate: bool = False,
                       keep_alive_s: float | None = None, dimensions: int | None = None,
                       normalize: bool = True, gone: Gone | None = None) -> Embedded:
    """One vector per input from the embedding model `name` names.

    Args:
        state: the server's pool and turns.
        name: the request's model (an id, an alias; the default model answers an unknown name if set).
        inputs: texts (framed as the model reads one input) or token arrays (used as given).
        truncate: cut an input longer than the model's context to fit, instead of refusing it (400).
        keep_alive_s: how long the model stays loaded after this request (None: the server's TTL).
        dimensions: the size the client asks for; anything but the model's own is refused.
        normalize: unit-length vectors (OpenAI's and Ollama's are).
        gone: whether the client has left (Starlette's `request.is_disconnected`), asked before each
            part: the rest is not evaluated for nobody.

    Raises:
        ApiError: 400 for inputs past the bounds, an input too long (naming its length and the
            model's), a token outside the vocabulary, a model that is not an embedding model, or
            `dimensions` other than the model's; 404, 503, 500 as `ServeState.lease`.
    """
    await _checked(inputs, "input")
    start = time.perf_counter()
    with await state.lease(name, keep_alive_s, kind="embedding") as lease:
        model = _model_of(lease)
        if dimensions is not None and dimensions != model.n_embd:
            raise bad_request(f"The model {lease.resident.id!r} makes vectors of {model.n_embd} dimensions and cannot "
                              f"shorten them to {dimensions}: leave 'dimensions' out, or ask for {model.n_embd}.",
                              "dimensions", "invalid_dimensions")
        tokens = await _work(state, partial(model.token_lists, inputs, truncate), lease.resident.id)
        _check_total(tokens)
        parts = []
        for at in range(0, len(tokens), EMBED_PART):
            await _still_wanted(gone)
            part = tokens[at : at + EMBED_PART]
            parts.append(await _work(state, partial(model.embed, part, normalize=normalize), lease.resident.id))
        vectors = np.concatenate(parts) if parts else np.zeros((0, model.n_embd), np.float32)
    return Embedded(lease.resident.id, tuple(len(t) for t in tokens), lease.load_ms,
                    (time.perf_counter() - start) * 1000, vectors=vectors)


async def rerank_documents(state: ServeState, name: str, query: str, documents: Sequence[str], *,
                           truncate: bool = False, keep_alive_s: float | None = None,
                           gone: Gone | None = None) -> Reranked:
    """Each document's relevance to `query`, from the reranking model `name` names (`truncate`,
    `keep_alive_s` and `gone` as for `embed_inputs`).

    Raises:
        ApiError: 400 for documents past the bounds, a pair too long (unless `truncate`), a model that
            is not a reranker; 404, 503, 500 as `ServeState.lease`.
    """
    if not query:
        raise bad_request("'query' is empty: give the text the documents are ranked against.", "query")
    unicode_text(query, "query")
    await _checked(documents, "documents")
    start = time.perf_counter()
    with await state.lease(name, keep_alive_s, kind="rerank") as lease:
        model = _model_of(lease)
        pairs = await _work(state, partial(model.rerank_tokens, query, documents, truncate), lease.resident.id,
                            pairs=True)
        _check_total(pairs)
        scores: list[float] = []
        for at in range(0, len(pairs), EMBED_PART):
            await _still_wanted(gone)
            part = pairs[at : at + EMBED_PART]
            scores += await _work(state, partial(model.score, part), lease.resident.id)
    return Reranked(lease.resident.id, tuple(len(p) for p in pairs), lease.load_ms,
                    (time.perf_counter() - start) * 1000, scores=tuple(scores))


async def _checked(inputs: Sequence[Input], param: str) -> None:
    """`check_inputs`, off the loop past EMBED_PART inputs (a million token ids are a tenth of a second)."""
    if len(inputs) <= EMBED_PART:
        check_inputs(inputs, param)
    else:
        await anyio.to_thread.run_sync(check_inputs, inputs, param)


async def _still_wanted(gone: Gone | None) -> None:
    if gone is not None and await gone():
        raise ApiError(499, "The client closed the request.")


def _model_of(lease: Lease) -> EmbeddingModel:
    return cast(EmbedModel, lease.resident.model).model


async def _work(state: ServeState, fn: Callable[[], T], model_id: str, pairs: bool = False) -> T:
    """`fn` on a worker thread, in the server's one embedding turn; the model's faults as 400s and 500s."""
    try:
        async with state.embed_turn():
            return await anyio.to_thread.run_sync(fn)
    except InputTooLong as e:
        raise _too_long(e, model_id, pairs) from None
    except BadInput as e:
        raise bad_request(f"{str(e)[:1].upper()}{str(e)[1:]}.", "documents" if pairs else "input") from None
    except EngineError as e:
        raise server_error(f"The model {model_id!r} failed: {e}.") from None


def _too_long(e: InputTooLong, model_id: str, pairs: bool) -> ApiError:
    what = f"The query and document {e.index} together are" if pairs else f"Input {e.index} is"
    err = context_exceeded(f"{what} {e.tokens} tokens, longer than the {e.limit} tokens the model {model_id!r} reads "
                           "at once. Shorten or split it, or send \"truncate\": true to have it cut to fit.")
    err.param = "documents" if pairs else "input"
    return err


def _check_total(tokens: Sequence[Sequence[int]]) -> None:
    total = sum(len(t) for t in tokens)
    if total > EMBED_MAX_TOKENS:
        raise bad_request(f"The inputs are {total} tokens together; at most {EMBED_MAX_TOKENS} are embedded in one "
                          "request. Send them in several.", "input")
