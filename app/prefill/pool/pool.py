"""`ModelPool`: several models resident at once, each loaded on demand, once.

A request asks `acquire(name)`: a resident model is leased at once; a model not loaded is loaded
on the asker's thread while every other asker of it waits for that one load (never a second copy);
a model that failed says why to all of them. A load that would pass the memory budget or the model
count first unloads the least recently used idle model: never one that is pinned, loading, leased
(between `acquire` and its request's submission) or with requests in flight (generating, prefilling
or queued, as `ChatModel.submit` counts them). When nothing can go, the load is refused with the
names of what holds the memory. An idle model whose time to live ran out (the pool's `ttl_s`, or
the last request's `keep_alive`) is unloaded by a reaper thread.

Thread-safe. No call holds the pool's lock while llama.cpp works: loads and unloads run outside it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from prefill.engine.errors import ModelLoadError
from prefill.engine.gguf.header import GGUFError
from prefill.engine.units import format_bytes
from prefill.pool.catalogue import KIND_NAMES, Kind, ModelEntry
from prefill.pool.errors import ModelBusy, ModelUnusable, PoolClosed, PoolFull, UnknownModel, WrongKind
from prefill.pool.memory import ModelMemory

log = logging.getLogger(__name__)

State = Literal["loaded", "loading", "not loaded", "unusable"]


class Servable(Protocol):
    """What a loader hands the pool: a loaded model of some kind."""

    kind: Kind
    memory: ModelMemory
    on_idle: Callable[[], None] | None

    @property
    def in_flight(self) -> int: ...  # requests submitted through it and not ended (exact)

    @property
    def seen_in_flight(self) -> int: ...  # those and any it serves for others (may be a little late)

    def close(self) -> None: ...


Loader = Callable[[ModelEntry], Servable]
Estimator = Callable[[ModelEntry], ModelMemory]


@dataclass(frozen=True)
class PoolLimits:
    """What the residents may take together.

    Attributes:
        budget: bytes (weights, KV caches, compute buffers, projectors of every resident); 0: no bound.
        max_models: residents at once, loading ones included; 0: no bound.
        ttl_s: an idle model is unloaded this long after its last request; None: never.
    """

    budget: int = 0
    max_models: int = 0
    ttl_s: float | None = None


@dataclass(eq=False)
class Resident:
    """A model in memory and what the pool knows of its use."""

    entry: ModelEntry
    model: Servable
    load_ms: float
    loaded_at: float  # time.time() when it finished loading
    last_used: float  # the pool's clock: the last acquire, release or request end
    leases: int = 0
    keep_alive_s: float | None = None  # the last request's: None the pool's TTL, < 0 forever

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def kind(self) -> Kind:
        return self.model.kind

    @property
    def memory(self) -> ModelMemory:
        return self.model.memory

    @property
    def busy(self) -> bool:
        """Leased, or with requests generating or queued: never unloaded."""
        return self.leases > 0 or self.model.in_flight > 0

    def as_kind(self, kind: Kind) -> Servable:
        """The model, when it is of `kind`.

        Raises:
            WrongKind: it is another kind of model.
        """
        if self.model.kind != kind:
            raise WrongKind(self.id, self.model.kind, kind)
        return self.model


@dataclass(frozen=True)
class ModelStatus:
    """One model as a listing shows it."""

    id: str
    state: State
    kind: Kind
    size: int  # bytes on disk
    path: str  # the file's name
    pinned: bool = False
    aliases: tuple[str, ...] = ()
    memory: ModelMemory | None = None  # measured when loaded, the estimate otherwise (None: unknown)
    in_flight: int = 0
    expires_at: float | None = None  # time.time() when its TTL unloads it if it stays idle (None: never)
    error: str = ""  # why it is unusable, or why its last load failed
    loads: int = 0  # loads started since the pool began


@dataclass(eq=False)
class _Slot:
    entry: ModelEntry
    state: State = "not loaded"
    resident: Resident | None = None
    pinned: bool = False
    error: str = ""
    failure: ModelLoadError | None = None  # the last load's, handed to those who waited for it
    loads: int = 0  # loads begun
    reserved: int = 0  # the estimate, counted while it loads


@dataclass(eq=False)
class Lease:
    """A resident model held for one request: it is not unloaded until `release` (or, once a request
    is submitted through it, until that request ends). `load_ms`: how long this acquire waited for
    a load (0 when the model was resident)."""

    resident: Resident
    load_ms: float
    _release: Callable[[Lease], None] = field(repr=False)
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._release(self)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class ModelPool:
    """The models of a catalogue, loaded on demand within `limits`.

    Args:
        entries: what may be loaded (ids unique), usable or not.
        loaders: one per kind: loads an entry (on the asker's thread).
        estimate: what an entry will take, before its load (reads headers; cached per entry).
        aliases: other names for ids (`--alias NAME=ID`).
        pinned: ids (or aliases) never unloaded by the budget, the count or the TTL.
        default_model: the id (or alias) that answers a name the catalogue lacks; "" for none.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, entries: Iterable[ModelEntry], loaders: Mapping[Kind, Loader], estimate: Estimator,
                 limits: PoolLimits = PoolLimits(), aliases: Mapping[str, str] | None = None,
                 pinned: Iterable[str] = (), default_model: str = "",
                 clock: Callable[[], float] = time.monotonic):
        self._slots: dict[str, _Slot] = {}
        self._loaders = dict(loaders)
        for e in entries:
            if e.id in self._slots:
                raise ValueError(f"two models are called {e.id!r}")
            if not e.unusable and e.kind not in self._loaders:
                e = replace(e, unusable=f"it is {KIND_NAMES[e.kind]}, which this server does not load")
            self._slots[e.id] = _Slot(e, "unusable" if e.unusable else "not loaded", error=e.unusable)
        self._estimate_of = estimate
        self._estimates: dict[str, ModelMemory | None] = {}
        self.limits = limits
        self.aliases: dict[str, str] = {}
        for name, target in (aliases or {}).items():
            if target not in self._slots:
                raise UnknownModel(target, self.ids())
            self.aliases[name] = target
        for name in pinned:
            self._slots[self.id_of(name)].pinned = True
        self.default_model = self.id_of(default_model) if default_model else ""
        self._clock = clock
        self._cv = threading.Condition()
        self._closed = False
        self._reaper: threading.Thread | None = None

    # --- names ---------------------------------------------------------------------------
    def ids(self) -> list[str]:
        return list(self._slots)

    def id_of(self, name: str) -> str:
        """The id a name means (an id, an alias); raises UnknownModel (no default applied)."""
        if name in self._slots:
            return name
        if name in self.aliases:
            return self.aliases[name]
        raise UnknownModel(name, self.ids())

    def resolve(self, name: str) -> ModelEntry:
        """The entry a request's `model` names: an id, an alias, else the default model if there is one.

        Raises:
            UnknownModel: none of these (its `ids` lists what there is).
        """
        try:
            return self._slots[self.id_of(name)].entry
        except UnknownModel:
            if self.default_model:
                return self._slots[self.default_model].entry
            raise

    # --- acquire, load, unload ---------------------------------------------------------------
    def acquire(self, name: str, keep_alive_s: float | None = None, kind: Kind | None = None) -> Lease:
        """Lease the model `name` names, loading it first if it is not resident (blocks meanwhile).

        `keep_alive_s` (Ollama's keep_alive): how long the model stays after this request; None
        keeps the pool's TTL, a negative value keeps it until unloaded by hand or for room, 0
        unloads it as soon as it is idle. `kind`: what the request needs of the model; another
        kind is refused before anything loads (its header said what it is).

        Raises:
            UnknownModel, ModelUnusable, PoolFull, PoolClosed: in words.
            WrongKind: the model is not of `kind`.
            ModelLoadError: the load failed (the others keep serving).
        """
        entry = self._entry_of_kind(name, kind)
        start = time.perf_counter()
        resident, waited = self._resident_or_load(entry)
        waited_ms = (time.perf_counter() - start) * 1000 if waited else 0.0
        with self._cv:
            return self._lease(resident, keep_alive_s, waited_ms)

    def acquire_resident(self, name: str, keep_alive_s: float | None = None, kind: Kind | None = None
                         ) -> Lease | None:
        """`acquire` when the model is resident already, else None: it never waits for a load, so
        an event loop may call it for the common case and hand only a load to a thread.

        Raises:
            UnknownModel, WrongKind: as `acquire`.
        """
        slot = self._slots[self._entry_of_kind(name, kind).id]
        with self._cv:
            if self._closed or slot.state != "loaded" or slot.resident is None:
                return None
            self._take(slot.resident)
            return self._lease(slot.resident, keep_alive_s, 0.0)

    def _take(self, resident: Resident) -> None:
        """Under the lock: one more lease on `resident`, now its last use."""
        resident.leases += 1
        resident.last_used = self._clock()

    def _lease(self, resident: Resident, keep_alive_s: float | None, load_ms: float) -> Lease:
        """Under the lock: the lease `_take` counted, with the request's keep_alive kept."""
        if keep_alive_s is not None:
            resident.keep_alive_s = keep_alive_s
        self._notify()
        return Lease(resident, load_ms, self._released)

    def _entry_of_kind(self, name: str, kind: Kind | None) -> ModelEntry:
        entry = self.resolve(name)
        if kind is not None and entry.kind != kind:
            raise WrongKind(entry.id, entry.kind, kind)
        return entry

    def load(self, name: str) -> Resident:
        """Make `name` resident (as `acquire`), leasing nothing: it may be unloaded once idle."""
        lease = self.acquire(name)
        lease.release()
        return lease.resident

    def _resident_or_load(self, entry: ModelEntry) -> tuple[Resident, bool]:
        """The resident, leased, and whether this asker waited for a load (its own or another's)."""
        slot = self._slots[entry.id]
        need = self._estimate(entry)
        with self._cv:
            waited = False
            while True:
                if self._closed:
                    raise PoolClosed("the server is shutting down")
                if slot.state == "loaded":
                    assert slot.resident is not None
                    self._take(slot.resident)
                    return slot.resident, waited
                if slot.state == "unusable":
                    raise ModelUnusable(entry.id, slot.error)
                if slot.state == "loading":
                    waited = True
                    self._cv.wait()
                    continue
                if waited and slot.failure is not None:
                    raise slot.failure  # the load this asker waited for failed: one failure, said once each
                break
            victims = self._make_room(slot, need.total if need else 0)
            slot.state, slot.reserved, slot.error, slot.failure = "loading", need.total if need else 0, "", None
            slot.loads += 1
        self._close_all(victims)
        t0 = time.perf_counter()
        try:
            model = self._loaders[entry.kind](entry)
        except BaseException as e:
            with self._cv:
                slot.reserved = 0
                if isinstance(e, GGUFError):
                    slot.state, slot.error = "unusable", str(e)
                    slot.failure = ModelUnusable(entry.id, str(e))
                else:
                    slot.state, slot.error = "not loaded", str(e) or e.__class__.__name__
                    slot.failure = e if isinstance(e, ModelLoadError) else ModelLoadError(
                        f"the model {entry.id!r} could not be loaded: {slot.error}")
                self._cv.notify_all()
            log.warning("loading %s failed: %s", entry.id, e)
            if isinstance(e, GGUFError):
                raise ModelUnusable(entry.id, str(e)) from None
            raise
        load_ms = (time.perf_counter() - t0) * 1000
        resident = Resident(entry, model, load_ms, time.time(), self._clock(), leases=1)
        model.on_idle = lambda: self._on_idle(resident)
        with self._cv:
            slot.reserved = 0
            if self._closed:
                model.close()
                raise PoolClosed("the server is shutting down")
            slot.state, slot.resident = "loaded", resident
            self._cv.notify_all()
        log.info("loaded %s in %.0f ms (%s)", entry.id, load_ms, model.memory.summary())
        return resident, True

    def unload(self, name: str) -> bool:
        """Unload a resident model now (pinned or not); False when it was not loaded.

        Raises:
            UnknownModel: no such model.
            ModelBusy: it is generating, has requests queued, or is loading.
        """
        slot = self._slots[self.id_of(name)]
        with self._cv:
            if slot.state == "loading":
                raise ModelBusy(f"the model {slot.entry.id!r} is loading; unload it once it is loaded")
            r = slot.resident
            if r is None:
                return False
            if r.busy or r.model.seen_in_flight:
                raise ModelBusy(f"the model {r.id!r} is {_use_of(r)}; it is unloaded once its requests end")
            self._evict(slot)
        self._close_all([r])
        return True

    def pin(self, name: str, pinned: bool = True) -> None:
        """Pin (never unloaded but by hand) or unpin a model."""
        slot = self._slots[self.id_of(name)]
        with self._cv:
            slot.pinned = pinned
            self._notify()

    def resident(self, name: str) -> Resident | None:
        slot = self._slots[self.id_of(name)]
        with self._cv:
            return slot.resident

    def residents(self) -> list[Resident]:
        with self._cv:
            return [s.resident for s in self._slots.values() if s.resident is not None]

    def used(self) -> int:
        """Bytes the residents take (and the estimates of those loading)."""
        with self._cv:
            return self._used()

    # --- listing ------------------------------------------------------------------------------
    def statuses(self) -> list[ModelStatus]:
        """Every model of the catalogue and its state, in catalogue order."""
        estimates = {i: self._estimate(s.entry) for i, s in self._slots.items() if s.state != "unusable"}
        now, wall = self._clock(), time.time()
        with self._cv:
            out = []
            for i, s in self._slots.items():
                r = s.resident
                expires = None
                if r is not None and not r.busy and not s.pinned:
                    ttl = self._ttl_of(r)
                    expires = None if ttl is None else wall + max(0.0, r.last_used + ttl - now)
                out.append(ModelStatus(
                    i, s.state, s.entry.kind, s.entry.size, s.entry.path.name, s.pinned,
                    tuple(a for a, t in self.aliases.items() if t == i),
                    r.memory if r is not None else estimates.get(i), r.model.in_flight if r is not None else 0,
                    expires, s.error, s.loads))
            return out

    # --- eviction ---------------------------------------------------------------------------
    def _used(self) -> int:
        return sum(s.resident.memory.total if s.resident is not None else s.reserved for s in self._slots.values())

    def _make_room(self, slot: _Slot, need: int) -> list[Resident]:
        """Evict least recently used idle residents until `need` more bytes and one more model fit.
        Under the lock. Raises PoolFull, naming what holds the memory, when they cannot."""
        budget, most = self.limits.budget, self.limits.max_models
        if budget and need > budget:
            raise PoolFull(f"the model {slot.entry.id!r} needs about {format_bytes(need)}, more than the whole "
                           f"memory budget of {format_bytes(budget)}")
        victims: list[Resident] = []

        def over() -> bool:
            count = sum(1 for s in self._slots.values() if s.state in ("loaded", "loading"))
            return bool((most and count + 1 > most) or (budget and self._used() + need > budget))

        while over():
            idle = [s for s in self._slots.values()
                    if s.resident is not None and not s.pinned and not s.resident.busy]
            if not idle:
                raise PoolFull(self._full_words(slot, need))
            lru = min(idle, key=lambda s: s.resident.last_used if s.resident is not None else 0.0)
            assert lru.resident is not None
            victims.append(lru.resident)
            log.info("unloading %s (least recently used) to make room for %s", lru.entry.id, slot.entry.id)
            self._evict(lru)
        return victims

    def _full_words(self, slot: _Slot, need: int) -> str:
        held = []
        for s in self._slots.values():
            if s.state == "loading":
                held.append(f"{s.entry.id} ({format_bytes(s.reserved)}, loading)")
            elif s.resident is not None:
                why = "pinned" if s.pinned else _use_of(s.resident)
                held.append(f"{s.entry.id} ({format_bytes(s.resident.memory.total)}, {why})")
        limits = []
        if self.limits.budget:
            limits.append(f"the memory budget is {format_bytes(self.limits.budget)}, {format_bytes(self._used())} "
                          f"in use, and it needs about {format_bytes(need)}")
        if self.limits.max_models:
            limits.append(f"at most {self.limits.max_models} models may be loaded at once")
        return (f"the model {slot.entry.id!r} cannot be loaded now: {'; '.join(limits)}, and no loaded model can "
                f"be unloaded: {', '.join(held)}. Try again when one is idle, or unload one (POST /models/unload)")

    def _evict(self, slot: _Slot) -> None:
        """Take a resident out (under the lock); its caller closes it outside."""
        slot.resident, slot.state = None, "not loaded"
        self._cv.notify_all()

    def _close_all(self, residents: Sequence[Resident]) -> None:
        for r in residents:
            try:
                r.model.close()
            except Exception:
                log.exception("unloading %s failed", r.id)
            log.info("unloaded %s", r.id)

    # --- use, and the TTL ------------------------------------------------------------------------
    def _released(self, lease: Lease) -> None:
        with self._cv:
            lease.resident.leases -= 1
            lease.resident.last_used = self._clock()
            self._notify()

    def _on_idle(self, resident: Resident) -> None:  # on a scheduler thread: its last request ended
        with self._cv:
            resident.last_used = self._clock()
            self._notify()

    def _ttl_of(self, r: Resident) -> float | None:
        ttl = r.keep_alive_s if r.keep_alive_s is not None else self.limits.ttl_s
        return None if ttl is None or ttl < 0 else ttl

    def _notify(self) -> None:
        """Under the lock: wake the reaper (started the first time any model could expire)."""
        if self._reaper is None and not self._closed and (
                self.limits.ttl_s is not None or any(s.resident and s.resident.keep_alive_s is not None
                                                     for s in self._slots.values())):
            self._reaper = threading.Thread(target=self._reap_loop, name="prefill-pool-ttl", daemon=True)
            self._reaper.start()
        self._cv.notify_all()

    def reap(self) -> list[str]:
        """Unload every idle, unpinned model whose time to live has run out; their ids."""
        with self._cv:
            expired = self._expired(self._clock())[0]
            victims = [s.resident for s in expired if s.resident is not None]
            for s in expired:
                self._evict(s)
        self._close_all(victims)
        return [r.id for r in victims]

    def _expired(self, now: float) -> tuple[list[_Slot], float | None]:
        """Under the lock: the slots to reap now, and the seconds until the next one may be due."""
        out, soonest = [], None
        for s in self._slots.values():
            r = s.resident
            if r is None or s.pinned or r.busy:
                continue
            ttl = self._ttl_of(r)
            if ttl is None:
                continue
            left = r.last_used + ttl - now
            if left <= 0:
                out.append(s)
            elif soonest is None or left < soonest:
                soonest = left
        return out, soonest

    def _reap_loop(self) -> None:
        while True:
            with self._cv:
                if self._closed:
                    return
                due, wait = self._expired(self._clock())
                if not due:
                    self._cv.wait(timeout=wait)
                    continue
            self.reap()

    def close(self) -> None:
        """Unload every model (requests still running get Failed) and stop the reaper."""
        with self._cv:
            self._closed = True
            gone = [s.resident for s in self._slots.values() if s.resident is not None]
            for s in self._slots.values():
                if s.resident is not None:
                    self._evict(s)
            self._cv.notify_all()
        self._close_all(gone)
        if self._reaper is not None:
            self._reaper.join(5)

    def estimate_all(self) -> None:
        """Read every usable model's header for its estimate now (they are cached), so that `statuses`,
        which an event loop may call, reads none later."""
        for slot in self._slots.values():
            if slot.state != "unusable":
                self._estimate(slot.entry)

    def _estimate(self, entry: ModelEntry) -> ModelMemory | None:
        if entry.id not in self._estimates:
            try:
                self._estimates[entry.id] = self._estimate_of(entry)
            except Exception as e:  # an unreadable header: its load will say why
                log.info("no estimate for %s: %s", entry.id, e)
                self._estimates[entry.id] = None
        return self._estimates[entry.id]


def _use_of(r: Resident) -> str:
    n = max(r.model.in_flight, r.model.seen_in_flight)
    if n:
        return f"serving {n} request{'s' if n != 1 else ''}"
    return "starting a request" if r.leases else "idle"
