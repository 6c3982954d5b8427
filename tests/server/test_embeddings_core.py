"""server/embeddings/core.py with a scripted embedding model (no llama.cpp): the kind is checked before
anything loads, the inputs are bounded before the model is leased, evaluated EMBED_PART at a time, and
a client that leaves stops the parts not yet evaluated. The real model over HTTP is in
test_embeddings_api.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from prefill.engine.embed.errors import InputTooLong
from prefill.pool.catalogue import Kind, ModelEntry
from prefill.pool.memory import ModelMemory
from prefill.pool.pool import ModelPool
from prefill.server.cost_bounds import EMBED_MAX_INPUTS, EMBED_MAX_TOKENS, EMBED_PART
from prefill.server.embeddings.core import embed_inputs, rerank_documents
from prefill.server.errors import ApiError
from prefill.server.state import ServeState

N_EMBD, N_CTX = 4, 4096


class ScriptedEmbedding:
    """EmbeddingModel's shape: a token per character, a vector of the input's length."""

    def __init__(self) -> None:
        self.n_embd, self.n_ctx = N_EMBD, N_CTX
        self.parts: list[int] = []  # inputs per `embed` call

    def token_lists(self, inputs: Sequence[str | Sequence[int]], truncate: bool = False) -> list[list[int]]:
        out = [[7] * len(x) if isinstance(x, str) else list(x) for x in inputs]
        for i, t in enumerate(out):
            if len(t) > N_CTX and not truncate:
                raise InputTooLong(i, len(t), N_CTX)
        return [t[:N_CTX] for t in out]

    def embed(self, inputs: Sequence[Sequence[int]], truncate: bool = False, normalize: bool = True) -> np.ndarray:
        self.parts.append(len(inputs))
        return np.array([[len(t), 0, 0, 0] for t in inputs], np.float32)


class ScriptedResident:
    """What the pool holds: the scripted model as `model`, as EmbedModel holds an EmbeddingModel."""

    def __init__(self, kind: Kind) -> None:
        self.kind: Kind = kind
        self.memory = ModelMemory(1 << 20, 0, 0, measured=True)
        self.on_idle: Callable[[], None] | None = None
        self.model = ScriptedEmbedding()
        self.in_flight = self.seen_in_flight = 0

    def close(self) -> None:
        pass


def state_with(loads: list[str]) -> ServeState:
    def load(entry: ModelEntry) -> ScriptedResident:
        loads.append(entry.id)
        return ScriptedResident(entry.kind)

    entries = [ModelEntry("chat", Path("c.gguf")), ModelEntry("minilm", Path("m.gguf"), kind="embedding")]
    pool = ModelPool(entries, {"chat": load, "embedding": load}, lambda e: ModelMemory(1 << 20, 0, 0))
    return ServeState(pool=pool, n_ctx=512)


def refusal(coro: object) -> ApiError:
    with pytest.raises(ApiError) as e:
        asyncio.run(coro)  # type: ignore[arg-type]
    return e.value


def test_inputs_go_in_parts_and_come_back_in_order_with_their_tokens() -> None:
    loads: list[str] = []
    state = state_with(loads)
    texts = ["x" * (i % 9 + 1) for i in range(2 * EMBED_PART + 2)]
    done = asyncio.run(embed_inputs(state, "minilm", texts))
    assert [int(v[0]) for v in done.vectors] == [len(t) for t in texts]
    assert done.tokens == tuple(len(t) for t in texts) and done.prompt_tokens == sum(map(len, texts))
    resident = state.pool.resident("minilm")
    assert resident is not None and resident.model.model.parts == [EMBED_PART, EMBED_PART, 2]  # type: ignore[attr-defined]
    assert loads == ["minilm"] and resident.leases == 0  # the lease ended with the request


def test_another_kind_and_bad_inputs_are_refused_before_anything_loads() -> None:
    loads: list[str] = []
    state = state_with(loads)
    err = refusal(embed_inputs(state, "chat", ["hello"]))
    assert err.status == 400 and err.code == "wrong_model_kind"
    assert err.message.startswith("The model 'chat' is a chat model: it answers chat and completion requests")
    assert "Ask one of these instead: 'minilm'." in err.message
    assert refusal(rerank_documents(state, "minilm", "q", ["a"])).message.endswith(
        "No model here is a reranking model.")
    assert refusal(embed_inputs(state, "minilm", [])).status == 400
    assert "at most 2048" in refusal(embed_inputs(state, "minilm", ["a"] * (EMBED_MAX_INPUTS + 1))).message
    assert "Input 1 is an empty text" in refusal(embed_inputs(state, "minilm", ["a", ""])).message
    assert "not an integer" in refusal(embed_inputs(state, "minilm", [[1, True]])).message
    assert refusal(embed_inputs(state, "nope", ["a"])).status == 404
    assert loads == []


def test_the_model_s_own_bounds_are_worded() -> None:
    state = state_with([])
    err = refusal(embed_inputs(state, "minilm", ["a", "b" * (N_CTX + 1)]))
    assert (err.status, err.code, err.param) == (400, "context_length_exceeded", "input")
    assert err.message.startswith(f"Input 1 is {N_CTX + 1} tokens, longer than the {N_CTX} tokens the model 'minilm'")
    assert asyncio.run(embed_inputs(state, "minilm", ["b" * (N_CTX + 1)], truncate=True)).tokens == (N_CTX,)
    many = ["c" * N_CTX] * (EMBED_MAX_TOKENS // N_CTX + 1)
    assert f"at most {EMBED_MAX_TOKENS}" in refusal(embed_inputs(state, "minilm", many)).message
    err = refusal(embed_inputs(state, "minilm", ["a"], dimensions=2))
    assert err.param == "dimensions" and f"vectors of {N_EMBD} dimensions" in err.message


def test_a_client_that_leaves_stops_the_parts_not_yet_evaluated() -> None:
    state = state_with([])
    asked = 0

    async def gone() -> bool:
        nonlocal asked
        asked += 1
        return asked > 1  # it leaves while the first part is evaluated

    err = refusal(embed_inputs(state, "minilm", ["x"] * (3 * EMBED_PART), gone=gone))
    assert err.status == 499
    resident = state.pool.resident("minilm")
    assert resident is not None and resident.model.model.parts == [EMBED_PART]  # type: ignore[attr-defined]
    assert resident.leases == 0
