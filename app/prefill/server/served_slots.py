"""What a running server holds, model by model: each resident model's state and its slots.

The window's Server panel lists the slots under each model's name when the server holds several
(`prefill serve --models-dir`, or pinned models beside the one served). `served_slots` reads it
from the pool: the models' states (the pool's own listing, whose estimates it reads once per model
and keeps) and each chat model's latest published `BatchSnapshot` (no wait on its decode thread).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from prefill.engine.batch.snapshot import BatchSnapshot, SlotSnapshot
from prefill.engine.units import format_bytes
from prefill.pool.chat_model import ChatModel
from prefill.pool.pool import ModelPool, State

SHOWN_STATES: tuple[State, ...] = ("loaded", "loading")  # a model not in memory has no slots to show


@dataclass(frozen=True)
class ModelSlots:
    """One model the server holds: its id, its state, what it takes, and its slots (`batch`; None while
    it loads, or for a model that is not a chat model)."""

    id: str
    state: State
    memory: int = 0  # bytes, measured once loaded (0: unknown)
    pinned: bool = False
    batch: BatchSnapshot | None = None

    def heading(self) -> str:
        """The model's line above its slots: "name · loaded · pinned · 1.2 GiB · 2 in flight · 3 prompts
        cached (40 MiB, 5 hits)"."""
        words = [self.id, self.state]
        if self.pinned:
            words.append("pinned")
        if self.memory:
            words.append(format_bytes(self.memory))
        if self.batch is not None and self.batch.in_flight:
            words.append(f"{self.batch.in_flight} in flight")
        cache = self.batch.prompt_cache if self.batch is not None else None
        if cache is not None and cache.entries:
            words.append(f"{cache.entries} prompt{'s' if cache.entries != 1 else ''} cached "
                         f"({format_bytes(cache.bytes)}, {cache.hits} hit{'s' if cache.hits != 1 else ''})")
        return " · ".join(words)


@dataclass(frozen=True)
class ServerSlots:
    """Every model the server holds, in the pool's order; the figures summed over them."""

    models: tuple[ModelSlots, ...] = ()

    @classmethod
    def of_one(cls, batch: BatchSnapshot, model_id: str = "") -> ServerSlots:
        """A server of one model, as its scheduler's snapshot says."""
        return cls((ModelSlots(model_id, "loaded", batch=batch),))

    def _batches(self) -> list[BatchSnapshot]:
        return [m.batch for m in self.models if m.batch is not None]

    @property
    def slots(self) -> tuple[SlotSnapshot, ...]:
        """Every model's slots, one after the other."""
        return tuple(s for b in self._batches() for s in b.slots)

    @property
    def in_flight(self) -> int:
        return sum(b.in_flight for b in self._batches())

    @property
    def queued(self) -> int:
        return sum(b.queued for b in self._batches())

    @property
    def aggregate_tps(self) -> float:
        return sum(b.aggregate_tps for b in self._batches())

    @property
    def served(self) -> int:
        return sum(b.served for b in self._batches())


def served_slots(pool: ModelPool) -> ServerSlots:
    """The pool's resident and loading models, each with its slots (any thread; it waits on no model)."""
    residents = {r.id: r for r in pool.residents()}
    out = []
    for st in pool.statuses():
        if st.state not in SHOWN_STATES:
            continue
        r = residents.get(st.id)
        batch = cast(ChatModel, r.model).scheduler.snapshot() if r is not None and r.kind == "chat" else None
        memory = st.memory.total if st.memory is not None and st.state == "loaded" else 0
        out.append(ModelSlots(st.id, st.state, memory, st.pinned, batch))
    return ServerSlots(tuple(out))
