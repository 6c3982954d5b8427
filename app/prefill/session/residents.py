"""The local models a session keeps in memory, so switching back to one costs no load.

The window and the terminal hold one `ChatEngine` per resident model (each its own context and
KV cache, its own load settings); the one the chat uses is the session's backend, the others wait
idle. Before a load, `make_room` unloads the least recently used idle ones until the new model's
fit estimate fits the memory budget and the count: never the chat's model (the one generating:
the session's thread runs one request at a time, so no other can be), never a pinned one. When even
then it does not fit, the model still loads (the chat needs one), alone beside the pinned ones.
The limits may change while models are resident (`set_limits`: the window's settings): a lower
budget or count unloads idle models at once, never the chat's. An idle model past its time to live
(`ttl_s`) is unloaded by `reap`, which the owner calls when `next_expiry` says one is due (the
window's engine thread on a timer, the terminal between turns).

Why not a `pool.ModelPool` of ChatEngines: the pool serves a fixed catalogue to many threads at
once (leases, waiting for another's load, a reaper thread), and its loader takes an entry alone;
a session loads any file a person opens, on one thread, with a progress bar that can cancel the
load. What the two share is the pool's measure of memory (`pool/memory.py`: the fit estimate
before a load, llama.cpp's figures after, the default budget) and its rule (least recently used
idle model out first, a pinned one never).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prefill.engine.units import format_bytes
from prefill.pool.errors import ModelBusy
from prefill.pool.memory import ModelMemory, default_budget, estimate, logged_buffers, measured

if TYPE_CHECKING:
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.session.backends import LocalModel

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResidentModel:
    """One model in memory, as the window and `/models` show it."""

    path: str
    name: str
    memory: ModelMemory
    pinned: bool
    current: bool  # the chat's model now


@dataclass(frozen=True)
class ResidentModels:
    """What is in memory, and the budget it shares (0: no bound)."""

    models: tuple[ResidentModel, ...] = ()
    budget: int = 0

    @property
    def used(self) -> int:
        return sum(m.memory.total for m in self.models)

    def line(self) -> str:
        """`2 models · 1.2 GiB of 14.0 GiB`, the sidebar's and the terminal's summary."""
        n = len(self.models)
        of = f" of {format_bytes(self.budget)}" if self.budget else ""
        return f"{n} model{'s' if n != 1 else ''} · {format_bytes(self.used)}{of}"


@dataclass(eq=False)
class _Held:
    target: LocalModel
    engine: ChatEngine
    memory: ModelMemory
    last_used: float
    pinned: bool = False


class Residents:
    """The session's idle and current local models, within a budget.

    Args:
        budget: bytes the residents may take together; None: what this machine has, less a margin
            (`pool.memory.default_budget`, read before the first load); 0: no bound.
        max_models: residents at once; 0: no bound.
        ttl_s: an idle model (not the chat's, not pinned) is unloaded this long after it was last
            used (by `reap`); None: never.
        retire: called with each engine unloaded here, before it is closed (the session saves its
            KV cache to disk).

    One thread uses it at a time (the session's), except `reap`, `next_expiry` and `snapshot`, which
    take its lock, as every change of what is held does: the terminal's reaper runs beside its chat.
    """

    def __init__(self, budget: int | None = None, max_models: int = 0,
                 retire: Callable[[ChatEngine], None] = lambda _e: None,
                 clock: Callable[[], float] = time.monotonic, ttl_s: float | None = None) -> None:
        self.budget = budget
        self.max_models = max_models
        self.ttl_s = ttl_s
        self._retire = retire
        self._clock = clock
        self._held: dict[str, _Held] = {}
        self._lock = threading.RLock()
        self._machine_budget: int | None = None  # the default budget, once read
        self.current = ""  # the path of the chat's model ("" none, or a remote / the server answers)

    # --- what is here ------------------------------------------------------------------------
    def snapshot(self) -> ResidentModels:
        with self._lock:
            models = tuple(ResidentModel(p, h.engine.header.name or Path(p).stem, h.memory, h.pinned,
                                         p == self.current) for p, h in self._held.items())
            return ResidentModels(models, self.budget or 0)

    def paths(self) -> list[str]:
        return list(self._held)

    def used(self) -> int:
        return sum(h.memory.total for h in self._held.values())

    # --- switching ---------------------------------------------------------------------------
    def take(self, target: LocalModel) -> ChatEngine | None:
        """The resident engine for `target`, now the chat's; None when it must be loaded (not here,
        or here with other load settings or projector: that copy is unloaded first)."""
        with self._lock:
            held = self._held.get(target.path)
            if held is None:
                return None
            if held.target.settings != target.settings or held.target.mmproj != target.mmproj:
                self._drop(target.path)
                return None
            held.last_used = self._clock()
            self.current = target.path
            return held.engine

    def make_room(self, target: LocalModel) -> list[str]:
        """Before `target` loads: unload least recently used idle models until its estimate fits the
        budget and the count. Returns the paths unloaded."""
        need = needed(target)
        with self._lock:
            return self._fit(self._budget_for(target), need, 1, f"to make room for {target.path}")

    def set_limits(self, budget: int | None, max_models: int, ttl_s: float | None) -> list[str]:
        """New limits (as `Residents` takes them), in force at once: idle models are unloaded, least
        recently used first, until the residents fit (never the chat's, never a pinned one), and
        those past the new time to live go. Returns the paths unloaded."""
        with self._lock:
            self.budget, self.max_models, self.ttl_s = budget, max_models, ttl_s
            held = self._held.get(self.current) or next(iter(self._held.values()), None)
            if budget is None and held is not None:  # what the machine has, read now, as for a load
                budget = self._budget_for(held.target)
            gone = self._fit(budget or 0, 0, 0, "for the new limits")
        return gone + self.reap()

    def _fit(self, budget: int, need: int, more: int, why: str) -> list[str]:
        """Under the lock: unload least recently used idle models until `more` models of `need` bytes
        more fit `budget` and the count."""
        gone: list[str] = []

        def over() -> bool:
            count = len(self._held) + more
            return bool((self.max_models and count > self.max_models)
                        or (budget and self.used() + need > budget))

        while over():
            idle = [(h.last_used, p) for p, h in self._held.items() if p != self.current and not h.pinned]
            if not idle:
                log.info("past the memory limits %s: every other model is pinned or in use", why)
                break
            path = min(idle)[1]
            log.info("unloading %s (least recently used) %s", path, why)
            self._drop(path)
            gone.append(path)
        return gone

    # --- the time to live ----------------------------------------------------------------------
    def next_expiry(self) -> float | None:
        """Seconds until the next idle model's time to live runs out (0: one is due now); None: none will."""
        with self._lock:
            lefts = [h.last_used + self.ttl_s - self._clock() for p, h in self._held.items()
                     if self.ttl_s is not None and p != self.current and not h.pinned]
        return max(0.0, min(lefts)) if lefts else None

    def reap(self) -> list[str]:
        """Unload every idle, unpinned model whose time to live ran out (its cache saved first); their paths."""
        with self._lock:
            if self.ttl_s is None:
                return []
            now = self._clock()
            due = [p for p, h in self._held.items()
                   if p != self.current and not h.pinned and now - h.last_used >= self.ttl_s]
            for path in due:
                log.info("unloading %s: idle for %.0f s", path, now - self._held[path].last_used)
                self._drop(path)
        return due

    def add(self, target: LocalModel, engine: ChatEngine) -> None:
        """A model just loaded for `target`: resident, and the chat's."""
        memory = measure(engine, target)
        with self._lock:
            self._held[target.path] = _Held(target, engine, memory, self._clock())
            self.current = target.path

    def step_aside(self) -> None:
        """The chat's model stays resident, idle (the chat moves to another model or an endpoint)."""
        with self._lock:
            if self.current in self._held:
                self._held[self.current].last_used = self._clock()
            self.current = ""

    def forget(self, path: str) -> ChatEngine | None:
        """Take a model out without closing it (its owner closes it); its engine, or None."""
        with self._lock:
            held = self._held.pop(path, None)
            if self.current == path:
                self.current = ""
        return held.engine if held is not None else None

    # --- by hand -----------------------------------------------------------------------------
    def unload(self, path: str) -> bool:
        """Unload an idle resident (pinned or not); False when it was not resident.

        Raises:
            ModelBusy: it is the chat's model now (pick another first).
        """
        with self._lock:
            if path not in self._held:
                return False
            if path == self.current:
                raise ModelBusy(f"{Path(path).name} is the chat's model; pick another model first, then unload it")
            self._drop(path)
        return True

    def pin(self, path: str, pinned: bool = True) -> bool:
        """Pin (never unloaded to make room) or unpin a resident; False when it is not resident."""
        with self._lock:
            held = self._held.get(path)
            if held is None:
                return False
            held.pinned = pinned
            held.last_used = self._clock()  # an unpinned model's time to live starts again
        return True

    def close(self) -> None:
        """Unload every resident, the chat's included."""
        with self._lock:
            for path in list(self._held):
                self._drop(path)
            self.current = ""

    def _drop(self, path: str) -> None:
        held = self._held.pop(path)
        if self.current == path:
            self.current = ""
        try:
            self._retire(held.engine)
        finally:
            held.engine.close()

    def _budget_for(self, target: LocalModel) -> int:
        if self.budget is None:  # what the machine has free, read once, before the first load (models
            if self._machine_budget is None:  # resident later take some of it themselves)
                self._machine_budget = default_budget(on_gpu=target.settings.n_gpu_layers not in (0, "none"))
                log.info("local models may take %s", format_bytes(self._machine_budget))
            self.budget = self._machine_budget
        return self.budget


def needed(target: LocalModel) -> int:
    """The fit estimate of `target` (0 when its header cannot be read: its load will say why)."""
    try:
        return estimate(Path(target.path), target.settings, 1, _projector_file(target)).total
    except Exception as e:  # noqa: BLE001 -- an unreadable header is the load's to refuse, in words
        log.info("no estimate for %s: %s", target.path, e)
        return 0


def _projector_file(target: LocalModel) -> Path | None:
    if target.mmproj:
        return Path(target.mmproj)
    if target.mmproj is None:  # BESIDE
        from prefill.engine.gguf.projector_files import find_projector

        return find_projector(Path(target.path))
    return None


def measure(engine: ChatEngine, target: LocalModel) -> ModelMemory:
    """llama.cpp's figures for a loaded engine: its weights (and a draft model's), its KV cache's
    cells, its compute and output buffers as llama.cpp reported making the context (the estimate
    where it did not: `ModelMemory.compute_measured` says which); the projector its file's size."""
    try:
        guess = estimate(engine.path, target.settings, 1, engine.projector.path if engine.projector else None)
    except Exception:  # noqa: BLE001 -- llama.cpp loaded it: its own figures stand
        guess = ModelMemory(0, 0, 0)
    weights = engine.runtime.model_bytes() + engine.draft_memory_bytes
    return measured(weights, engine.n_ctx, engine.bytes_per_cell, guess, logged_buffers(engine.runtime.context_log))
