"""The local models a session keeps in memory, so switching back to one costs no load.

The window and the terminal hold one `ChatEngine` per resident model (each its own context and
KV cache, its own load settings); the one the chat uses is the session's backend, the others wait
idle. Before a load, `make_room` unloads the least recently used idle ones until the new model's
fit estimate fits the memory budget and the count: never the chat's model (the one generating:
the session's thread runs one request at a time, so no other can be), never a pinned one. When even
then it does not fit, the model still loads (the chat needs one), alone beside the pinned ones.

Why not a `pool.ModelPool` of ChatEngines: the pool serves a fixed catalogue to many threads at
once (leases, waiting for another's load, a reaper thread), and its loader takes an entry alone;
a session loads any file a person opens, on one thread, with a progress bar that can cancel the
load. What the two share is the pool's measure of memory (`pool/memory.py`: the fit estimate
before a load, llama.cpp's figures after, the default budget) and its rule (least recently used
idle model out first, a pinned one never).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prefill.engine.units import format_bytes
from prefill.pool.errors import ModelBusy
from prefill.pool.memory import ModelMemory, default_budget, estimate, measured

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
        retire: called with each engine unloaded here, before it is closed (the session saves its
            KV cache to disk).
    """

    def __init__(self, budget: int | None = None, max_models: int = 0,
                 retire: Callable[[ChatEngine], None] = lambda _e: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.max_models = max_models
        self._retire = retire
        self._clock = clock
        self._held: dict[str, _Held] = {}
        self.current = ""  # the path of the chat's model ("" none, or a remote / the server answers)

    # --- what is here ------------------------------------------------------------------------
    def snapshot(self) -> ResidentModels:
        models = tuple(ResidentModel(p, h.engine.header.name or Path(p).stem, h.memory, h.pinned, p == self.current)
                       for p, h in self._held.items())
        return ResidentModels(models, self.budget or 0)

    def paths(self) -> list[str]:
        return list(self._held)

    def used(self) -> int:
        return sum(h.memory.total for h in self._held.values())

    # --- switching ---------------------------------------------------------------------------
    def take(self, target: LocalModel) -> ChatEngine | None:
        """The resident engine for `target`, now the chat's; None when it must be loaded (not here,
        or here with other load settings or projector: that copy is unloaded first)."""
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
        budget = self._budget_for(target)
        gone: list[str] = []

        def over() -> bool:
            count = len(self._held) + 1
            return bool((self.max_models and count > self.max_models)
                        or (budget and self.used() + need > budget))

        while over():
            idle = [(h.last_used, p) for p, h in self._held.items() if p != self.current and not h.pinned]
            if not idle:
                log.info("%s is loaded past the memory budget: every other model is pinned or in use", target.path)
                break
            path = min(idle)[1]
            log.info("unloading %s (least recently used) to make room for %s", path, target.path)
            self._drop(path)
            gone.append(path)
        return gone

    def add(self, target: LocalModel, engine: ChatEngine) -> None:
        """A model just loaded for `target`: resident, and the chat's."""
        self._held[target.path] = _Held(target, engine, measure(engine, target), self._clock())
        self.current = target.path

    def step_aside(self) -> None:
        """The chat's model stays resident, idle (the chat moves to another model or an endpoint)."""
        if self.current in self._held:
            self._held[self.current].last_used = self._clock()
        self.current = ""

    def forget(self, path: str) -> ChatEngine | None:
        """Take a model out without closing it (its owner closes it); its engine, or None."""
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
        if path not in self._held:
            return False
        if path == self.current:
            raise ModelBusy(f"{Path(path).name} is the chat's model; pick another model first, then unload it")
        self._drop(path)
        return True

    def pin(self, path: str, pinned: bool = True) -> bool:
        """Pin (never unloaded to make room) or unpin a resident; False when it is not resident."""
        held = self._held.get(path)
        if held is None:
            return False
        held.pinned = pinned
        return True

    def close(self) -> None:
        """Unload every resident, the chat's included."""
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
        if self.budget is None:  # read once, before the first load: what the machine has free now
            self.budget = default_budget(on_gpu=target.settings.n_gpu_layers != 0)
            log.info("local models may take %s", format_bytes(self.budget))
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
    cells; the compute buffers as estimated, the projector its file's size."""
    try:
        guess = estimate(engine.path, target.settings, 1, engine.projector.path if engine.projector else None)
    except Exception:  # noqa: BLE001 -- llama.cpp loaded it: its own figures stand
        guess = ModelMemory(0, 0, 0)
    weights = engine.runtime.model_bytes() + engine.draft_memory_bytes
    return measured(weights, engine.n_ctx, engine.bytes_per_cell, guess)
