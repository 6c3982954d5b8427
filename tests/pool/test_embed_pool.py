"""Embedding and reranking models in the pool with real llama.cpp: resident beside a chat model, each
loaded once, measured; unloaded for room and by the TTL by the same rules as a chat model, and never
while a call computes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from prefill.engine.settings import LoadSettings
from prefill.pool.catalogue import ModelEntry, checked
from prefill.pool.chat_model import ChatLoad, load_chat
from prefill.pool.embed_model import EmbedLoad, EmbedModel, load_embedding
from prefill.pool.errors import ModelBusy, PoolFull
from prefill.pool.memory import ModelMemory
from prefill.pool.pool import ModelPool, PoolLimits, Servable
from tests.pool.test_pool_models import ask
from tests.pool.test_pool_rules import Clock

pytestmark = pytest.mark.model
SETTINGS = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1)
WAIT_S = 60


class Loads:
    """The chat and embedding loaders, counting loads per model."""

    def __init__(self) -> None:
        self.chat, self.embed = ChatLoad(SETTINGS, parallel=1), EmbedLoad(SETTINGS)
        self.count: dict[str, int] = {}

    def __call__(self, entry: ModelEntry) -> Servable:
        self.count[entry.id] = self.count.get(entry.id, 0) + 1
        return load_chat(entry, self.chat) if entry.kind == "chat" else load_embedding(entry, self.embed)

    def estimate(self, entry: ModelEntry) -> ModelMemory:
        return self.chat.estimate(entry) if entry.kind == "chat" else self.embed.estimate(entry)


def make(smollm2: Path, minilm: Path, reranker: Path, limits: PoolLimits = PoolLimits(),
         clock: Clock | None = None) -> tuple[ModelPool, Loads]:
    loads = Loads()
    entries = checked([ModelEntry("chat", smollm2), ModelEntry("minilm", minilm), ModelEntry("ranker", reranker)])
    pool = ModelPool(entries, {"chat": loads, "embedding": loads, "rerank": loads}, loads.estimate, limits,
                     clock=clock or time.monotonic)
    return pool, loads


@pytest.fixture
def pool_of_three(smollm2: Path, minilm_gguf: Path, minilm_reranker: Path) -> Iterator[tuple[ModelPool, Loads]]:
    pool, loads = make(smollm2, minilm_gguf, minilm_reranker)
    yield pool, loads
    pool.close()


def embedder(pool: ModelPool, name: str = "minilm") -> EmbedModel:
    r = pool.resident(name)
    assert r is not None
    return cast(EmbedModel, r.model)


def test_chat_embedding_and_reranking_models_are_resident_at_once(pool_of_three: tuple[ModelPool, Loads]) -> None:
    pool, loads = pool_of_three
    assert [(s.id, s.kind) for s in pool.statuses()] == [("chat", "chat"), ("minilm", "embedding"),
                                                         ("ranker", "rerank")]
    for _ in range(2):
        with pool.acquire("chat", kind="chat") as lease:
            answer = ask(lease.resident.model, "Say hello.")
        assert answer.wait().reason == "length"
        with pool.acquire("minilm", kind="embedding") as lease:
            assert cast(EmbedModel, lease.resident.model).model.embed(["hello", "world"]).shape == (2, 384)
        with pool.acquire("ranker", kind="rerank") as lease:
            assert len(cast(EmbedModel, lease.resident.model).model.rerank("q", ["a", "b", "c"])) == 3
    assert loads.count == {"chat": 1, "minilm": 1, "ranker": 1}
    status = {s.id: s for s in pool.statuses()}
    assert all(s.state == "loaded" for s in status.values())
    m = status["minilm"].memory
    assert m is not None and m.measured and 40e6 < m.weights < 50e6 and m.compute > 0  # llama.cpp's figures
    assert pool.used() == sum(s.memory.total for s in status.values() if s.memory is not None)


def test_the_least_recently_used_idle_model_goes_whatever_its_kind(
    smollm2: Path, minilm_gguf: Path, minilm_reranker: Path,
) -> None:
    clock = Clock()
    pool, loads = make(smollm2, minilm_gguf, minilm_reranker, PoolLimits(max_models=2), clock)
    try:
        pool.load("chat")
        clock.tick()
        pool.load("minilm")
        clock.tick()
        pool.load("ranker")  # the chat model is the least recently used
        assert [s.id for s in pool.statuses() if s.state == "loaded"] == ["minilm", "ranker"]
        clock.tick()
        pool.load("chat")  # now the embedding model is
        assert [s.id for s in pool.statuses() if s.state == "loaded"] == ["chat", "ranker"]
        assert loads.count == {"chat": 2, "minilm": 1, "ranker": 1}
    finally:
        pool.close()


def test_an_embedding_model_is_never_unloaded_while_a_call_computes(
    smollm2: Path, minilm_gguf: Path, minilm_reranker: Path,
) -> None:
    pool, _ = make(smollm2, minilm_gguf, minilm_reranker, PoolLimits(max_models=1))
    try:
        pool.load("minilm")
        model = embedder(pool).model
        done = threading.Event()
        with model._lock:  # the model is busy with another call: this one waits for it, counted
            worker = threading.Thread(target=lambda: (model.embed(["a sentence"]), done.set()))
            worker.start()
            end = time.monotonic() + WAIT_S
            while model.in_flight == 0:
                assert time.monotonic() < end, "the call never started"
                time.sleep(0.005)
            with pytest.raises(ModelBusy, match="serving 1 request"):
                pool.unload("minilm")
            with pytest.raises(PoolFull, match="minilm .*serving 1 request"):
                pool.load("chat")
            assert pool.reap() == []
        worker.join(WAIT_S)
        assert done.is_set() and model.in_flight == 0
        pool.load("chat")  # idle now: it goes for the chat model
        assert [s.id for s in pool.statuses() if s.state == "loaded"] == ["chat"]
    finally:
        pool.close()


def test_an_idle_embedding_model_is_unloaded_by_the_ttl(
    smollm2: Path, minilm_gguf: Path, minilm_reranker: Path,
) -> None:
    clock = Clock()
    pool, _ = make(smollm2, minilm_gguf, minilm_reranker, PoolLimits(ttl_s=60), clock)
    try:
        lease = pool.acquire("minilm", kind="embedding")
        clock.tick(120)
        assert pool.reap() == []  # leased: a request holds it between its calls
        lease.release()
        clock.tick(59)
        assert pool.reap() == []
        clock.tick(2)
        assert pool.reap() == ["minilm"]
        assert pool.resident("minilm") is None
    finally:
        pool.close()

