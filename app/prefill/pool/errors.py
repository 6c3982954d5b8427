"""The pool's typed errors: each message is already a sentence a person can act on."""

from __future__ import annotations

from collections.abc import Sequence

from prefill.engine.errors import EngineError, ModelLoadError
from prefill.pool.catalogue import KIND_NAMES, Kind


class PoolError(EngineError):
    """Base of the pool's refusals."""


class UnknownModel(PoolError):
    """No model of that name (nor alias) is in the pool's catalogue."""

    def __init__(self, name: str, ids: Sequence[str]):
        self.name = name
        self.ids = tuple(ids)
        listed = ", ".join(repr(i) for i in self.ids) or "none"
        super().__init__(f"there is no model {name!r} here; the models are: {listed}")


class ModelUnusable(ModelLoadError):
    """The model's file was refused (its header, or llama.cpp at its load); `reason` says why."""

    def __init__(self, model_id: str, reason: str):
        self.model_id = model_id
        self.reason = reason
        super().__init__(f"the model {model_id!r} cannot be loaded: {reason}")


class PoolFull(PoolError):
    """Loading one more model would pass the memory budget or the model count, and every resident
    model is generating, queued, pinned or loading; the message names what holds the memory."""


class ModelBusy(PoolError):
    """An unload asked of a model that is generating, has requests queued, or is loading."""


class WrongKind(PoolError):
    """A request asked a model for what its kind does not do (a chat of an embedding model).

    Attributes:
        model_id: the model asked for.
        kind: what it is ("chat", "embedding", "rerank").
        wanted: what the request needs of it.
    """

    def __init__(self, model_id: str, kind: Kind, wanted: Kind):
        self.model_id, self.kind, self.wanted = model_id, kind, wanted
        super().__init__(f"the model {model_id!r} is {KIND_NAMES[kind]}; it does not serve {wanted} requests")


class PoolClosed(PoolError):
    """The pool is shutting down."""
