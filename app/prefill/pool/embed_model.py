"""An embedding or reranking model of the pool: engine/embed's `EmbeddingModel`, resident beside the
chat models and weighed, evicted and reaped by the same rules.

The model counts its own calls (running or waiting for its lock) as `in_flight`, and calls `on_idle`
when the last one ends, so the pool never unloads it while it computes; a request that leases it
holds it between its calls too. What it takes is llama.cpp's own figures (weights, a causal model's
KV cache, the compute and output buffers), estimated from the header before the load.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prefill.engine.embed.model import EmbeddingModel, Memory, estimate_memory
from prefill.engine.errors import ModelLoadError
from prefill.engine.settings import LoadSettings
from prefill.pool.catalogue import KIND_NAMES, Kind, ModelEntry
from prefill.pool.memory import ModelMemory


@dataclass(frozen=True)
class EmbedLoad:
    """How the pool loads an embedding or reranking model whose entry brings no settings of its own:
    `n_ctx` caps an input's tokens (the model's trained length when that is less), the threads and GPU
    layers as for a chat model."""

    settings: LoadSettings

    def settings_for(self, entry: ModelEntry) -> LoadSettings:
        return entry.settings or self.settings

    def estimate(self, entry: ModelEntry) -> ModelMemory:
        """What the entry will take once loaded, from its header (no load)."""
        return _as_pool_memory(estimate_memory(entry.path, self.settings_for(entry)))


class EmbedModel:
    """A loaded embedding or reranking model, as the pool holds it. `model` is the `EmbeddingModel` a
    request calls (thread-safe: one call at a time, the rest wait for its lock)."""

    def __init__(self, model: EmbeddingModel):
        self.model = model
        self.kind: Kind = model.kind
        self.memory = _as_pool_memory(model.memory)

    @property
    def on_idle(self) -> Callable[[], None] | None:
        return self.model.on_idle

    @on_idle.setter
    def on_idle(self, hook: Callable[[], None] | None) -> None:
        self.model.on_idle = hook

    @property
    def in_flight(self) -> int:
        """Calls running or waiting for the model (exact)."""
        return self.model.in_flight

    @property
    def seen_in_flight(self) -> int:
        return self.model.in_flight

    def close(self) -> None:
        """Free the context and the weights (after the call running, if one is: it holds the lock)."""
        self.model.close()


def load_embedding(entry: ModelEntry, load: EmbedLoad) -> EmbedModel:
    """Load the file (its header through the guard first) in llama.cpp's embedding mode with the pooling
    its header names, and measure what it took.

    Raises:
        GGUFError: the guard refused the file.
        ModelLoadError: llama.cpp refused it, or it is not the kind its header said.
    """
    model = EmbeddingModel.load(entry.path, load.settings_for(entry))
    if model.kind != entry.kind:
        model.close()
        raise ModelLoadError(f"{entry.path.name} loaded as {KIND_NAMES[model.kind]} ({model.pooling} pooling), "
                             f"where its header said {KIND_NAMES[entry.kind]}")
    return EmbedModel(model)


def _as_pool_memory(m: Memory) -> ModelMemory:
    return ModelMemory(m.weights, m.kv, m.compute, measured=m.measured)
