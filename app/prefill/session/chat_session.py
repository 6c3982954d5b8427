"""The conversation's side of the app, without Qt: what answers, its cache on disk, and serving.

`ChatSession` decides what the window's engine worker used to decide: which backend answers (a
model file, a remote endpoint, a slot of the server while the model is served), saving a
conversation's KV cache as the user leaves it and restoring it on return, and handing the
model to the server and back. One thread uses a session at a time (the window's engine thread,
or the terminal's main thread); what it reports on its own goes to `SessionEvents`.

Local models stay resident as the chat moves between them (`session/residents.py`): switching back
to one still in memory costs no load and, when its live cache still holds the chat, no restore
from disk. The least recently used idle one is unloaded when the memory budget requires (its
cache saved first); the chat's own model never is, nor a pinned one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from prefill.engine.chat_backend import Event
from prefill.engine.errors import EngineError
from prefill.engine.events import MetricsSnapshot
from prefill.engine.local.kv_disk import KvDiskCache, Usage
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.speculation import Speculation
from prefill.session.backends import (
    LocalModel,
    ServerSlot,
    Target,
    apply_speculation,
    describe,
    open_backend,
    open_local,
    refusal_text,
)
from prefill.session.capabilities import ChatBackend, KeepsCacheOnDisk
from prefill.session.loaded import LoadedModel
from prefill.session.residents import ResidentModels, Residents

if TYPE_CHECKING:  # the server and llama.cpp are imported when a model is loaded or served, not with the session
    from prefill.engine.batch.snapshot import BatchSnapshot
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.server.lifecycle import RunningServer, ServeOptions
    from prefill.server.served_slots import ServerSlots


def _ignore(*_args: object) -> None:
    return None


@dataclass
class SessionEvents:
    """What a session reports between requests; each runs on the session's thread and must not block."""

    cache_note: Callable[[str], None] = _ignore  # a saved cache was discarded or not saved, and why
    disk_usage: Callable[[Usage], None] = _ignore  # the saved-cache folder changed
    # the server's models and their slots, live, while serving (on a decode thread: it must not block)
    server_snapshot: Callable[[ServerSlots], None] | None = None
    serve_stopped: Callable[[], None] = _ignore  # the server stopped
    reload_failed: Callable[[str], None] = _ignore  # the model could not be loaded again after serving
    residents: Callable[[ResidentModels], None] = _ignore  # the local models in memory changed


class NoModel(EngineError):
    """Nothing is loaded to answer."""


class ServeRefused(Exception):
    """The server could not start; the sentence says why (the chat goes on as before)."""


class ChatSession:
    """What answers the conversation now, and what goes with it."""

    def __init__(self, disk: KvDiskCache | None = None, events: SessionEvents | None = None,
                 budget: int | None = None, max_models: int = 0, ttl_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`budget`: bytes the resident local models may take (None: what the machine has, less a
        margin; 0: no bound); `max_models`: how many at once (0: no bound; 1: today's one at a time);
        `ttl_s`: an idle one is unloaded this long after its last use, by `reap_idle` (None: never);
        `clock`: monotonic seconds, for those times (tests pass their own)."""
        self.disk = disk  # None: no saved caches (tests, the terminal)
        self.events = events or SessionEvents()
        self.residents = Residents(budget, max_models, retire=self._retire, clock=clock, ttl_s=ttl_s)
        self.backend: ChatBackend | None = None
        self.server: RunningServer | None = None  # while the model is served; the chat is then its slot
        self._local: LocalModel | None = None  # the model file loaded (to serve and reload it)
        self._shown: list[Message] | None = None  # the conversation the user is in, for after a load

    # --- what answers ------------------------------------------------------------------
    def load(self, target: Target, progress: Callable[[float], bool] | None = None,
             keep: Callable[[], bool] = lambda: True) -> LoadedModel | None:
        """Make `target` what answers: a local model still resident is taken as it is (no load; its
        `LoadedModel.resident` says so), else it is opened, after the least recently used idle models
        the budget requires are unloaded. The model that answered stays resident, idle. None when
        `keep()` says no once it is open (superseded or cancelled meanwhile: it is closed again).

        Raises:
            ModelLoadError, RemoteError, OSError, ValueError: it could not be opened.
        """
        self.step_aside()
        t0 = time.perf_counter()
        if isinstance(target, LocalModel):
            engine = self.residents.take(target)
            if engine is not None:
                self._speculate(engine, target)
                self.backend, self._local = engine, target
                info = replace(describe(engine, target, (time.perf_counter() - t0) * 1000), resident=True)
                self._restore()
                self._report_residents()
                return info
            self.residents.make_room(target)
            engine = open_local(target, progress)
            if not keep():
                engine.close()
                self._report_residents()
                return None
            self.residents.add(target, engine)
            backend: ChatBackend = engine
        else:
            backend = open_backend(target, progress)
            if not keep():
                backend.close()
                return None
        self.backend = backend
        self._local = target if isinstance(target, LocalModel) else None
        info = describe(backend, target, (time.perf_counter() - t0) * 1000)
        self._restore()
        self._report_residents()
        return info

    def step_aside(self) -> None:
        """Stop serving; what answers stops answering: a local model stays resident (idle, its live
        cache kept), an endpoint is closed."""
        self._stop_server()
        backend, self.backend, self._local = self.backend, None, None
        if backend is None:
            return
        if backend.local is not None and self.residents.current:
            self.residents.step_aside()
        else:
            backend.close()

    def unload(self) -> None:
        """Stop serving, save the chat's cache, free the chat's model (or close the endpoint); the
        other resident models stay."""
        self._stop_server()
        if self.backend is not None:
            backend, self.backend = self.backend, None
            if self.residents.current:
                self.residents.forget(self.residents.current)
                self._retire_backend(backend)
            else:
                self._save_of(backend)
                backend.close()
        self._local = None
        self._report_residents()

    def close(self) -> None:
        """Free everything: the chat's model and every resident (their caches saved)."""
        self.unload()
        self.residents.close()
        self._report_residents()

    # --- the resident models ----------------------------------------------------------------
    def resident_models(self) -> ResidentModels:
        return self.residents.snapshot()

    def unload_model(self, path: str) -> bool:
        """Unload a resident model that is not the chat's (its cache saved); False when it was not
        resident.

        Raises:
            ModelBusy: it is the chat's model.
        """
        done = self.residents.unload(path)
        self._report_residents()
        return done

    def pin_model(self, path: str, pinned: bool = True) -> bool:
        """Pin a resident model (never unloaded to make room) or unpin it; False when not resident."""
        done = self.residents.pin(path, pinned)
        self._report_residents()
        return done

    def set_limits(self, budget: int | None, max_models: int, ttl_s: float | None) -> list[str]:
        """New limits for the resident models (as the constructor takes them), in force at once: idle
        models are unloaded until the rest fit (never the chat's, never a pinned one; their caches
        saved). Returns the paths unloaded."""
        gone = self.residents.set_limits(budget, max_models, ttl_s)
        self._report_residents()
        return gone

    def reap_idle(self) -> list[str]:
        """Unload the idle models whose time to live ran out (their caches saved); their paths. Only
        when one went are the residents reported."""
        gone = self.residents.reap()
        if gone:
            self._report_residents()
        return gone

    def _speculate(self, engine: ChatEngine, target: LocalModel) -> None:
        """A resident taken again: its speculation as the target wants it (a draft loaded only if new)."""
        engine.speculation_note = ""
        draft = engine.draft_model  # what it has, whatever was asked of it since its load
        had = Speculation("draft", str(draft.path)) if draft is not None else None
        try:
            apply_speculation(engine, target.speculation, had)
        except EngineError as e:
            engine.speculation_note = refusal_text(e)

    def _retire(self, engine: ChatEngine) -> None:
        """A resident leaves memory: its live cache saved to disk first (closed by the caller)."""
        self._save_engine(engine)

    def _retire_backend(self, backend: ChatBackend) -> None:
        self._save_of(backend)
        backend.close()

    def _report_residents(self) -> None:
        self.events.residents(self.residents.snapshot())

    def stream(self, request: ChatRequest, cancel: threading.Event | None = None) -> Iterator[Event]:
        """Answer `request` with what answers now (its conversation becomes the one shown).

        Raises:
            NoModel: nothing is loaded; and whatever the backend raises (ContextOverflow, TemplateError…).
        """
        backend = self._backend()
        self._shown = list(request.messages)
        yield from backend.stream(request, cancel)

    def count_tokens(self, request: ChatRequest) -> int | None:
        """The prompt tokens of `request`, or None where a remote writes the prompt."""
        return self._backend().count_tokens(request)

    def kv_snapshot(self) -> MetricsSnapshot:
        return self._backend().kv_snapshot()

    def _backend(self) -> ChatBackend:
        if self.backend is None:
            raise NoModel("no model is loaded yet")
        return self.backend

    # --- serving the model: the chat as one of the server's slots ----------------------------
    def serve(self, options: ServeOptions) -> str:
        """Serve the local model over HTTP with one copy of it: the chat becomes one of its slots.
        Returns the server's address.

        Raises:
            ServeRefused: no local model, an exposure without a key, or the server failed to start
                (the chat then has its own copy back).
        """
        from prefill.server.lifecycle import ExposureError, RunningServer, check_exposure

        if self.server is not None:
            return self.server.url
        if self._local is None or self.backend is None:
            raise ServeRefused("Load a local model first: a remote endpoint is served by its own machine.")
        try:
            check_exposure(options.host, options.api_key)
        except ExposureError as e:
            raise ServeRefused(f"The server could not start: {e}") from None
        local = self._local
        self.residents.forget(local.path)
        self._save()
        self.backend.close()  # one copy of the model: the server's, with a slot for this chat
        self.backend = None
        self._report_residents()
        try:
            server = RunningServer.open(
                options, on_snapshot=self._on_server_snapshot if self.events.server_snapshot is not None else None)
        except (EngineError, OSError, ValueError) as e:
            self._reload(local)
            raise ServeRefused(f"The server could not start: {e}") from None
        server.start_thread()
        self.server = server
        self.backend = open_backend(ServerSlot(server.scheduler))
        return server.url

    def stop_serving(self) -> None:
        """Stop the server (streams in flight get a few seconds) and give the chat its own copy back."""
        if self.server is None:
            self.events.serve_stopped()
            return
        self._stop_server()
        if self._local is not None:
            self._reload(self._local)

    def _on_server_snapshot(self, batch: BatchSnapshot) -> None:
        """A scheduler of the server published its slots (on its decode thread): every model's, grouped."""
        from prefill.server.served_slots import ServerSlots, served_slots

        report, server = self.events.server_snapshot, self.server
        if report is not None:
            report(served_slots(server.pool) if server is not None else ServerSlots.of_one(batch))

    def _stop_server(self) -> None:
        server, self.server = self.server, None
        if server is None:
            return
        self.backend = None  # its slot goes with the scheduler
        server.stop()  # frees the model
        self.events.serve_stopped()

    def _reload(self, local: LocalModel) -> None:
        try:
            self.residents.make_room(local)
            engine = open_local(local)
        except (EngineError, OSError, ValueError) as e:
            self._local = None
            self.events.reload_failed(str(e))
            self._report_residents()
            return
        self.backend, self._local = engine, local
        self.residents.add(local, engine)
        self._restore()
        self._report_residents()

    # --- the KV cache on disk: saved as the user leaves a conversation, restored on return ----
    def show(self, messages: list[Message]) -> None:
        """The user now shows `messages` ([] for a new chat): save the cache of the chat they left,
        restore this one's."""
        self._shown = list(messages)
        if self.backend is not None:
            self._save()
            self._restore()

    def set_cache_budget(self, budget: int) -> None:
        """Bytes the saved caches may take (0 turns saving off); the oldest go first."""
        if self.disk is not None:
            self.disk.budget = budget
            self.disk.evict()
            self._report_usage()

    def clear_cache(self) -> None:
        if self.disk is not None:
            self.disk.clear()
            self._report_usage()

    def _local_engine(self) -> KeepsCacheOnDisk | None:
        """What answers, when it keeps a cache of its own to save (the chat's own copy of the model)."""
        return self.backend.disk_cache if self.backend is not None else None

    def _save(self) -> None:
        engine = self._local_engine()
        if engine is not None:
            self._save_engine(engine)

    def _save_of(self, backend: ChatBackend) -> None:
        engine = backend.disk_cache
        if engine is not None:
            self._save_engine(engine)

    def _save_engine(self, engine: KeepsCacheOnDisk) -> None:
        if self.disk is None:
            return
        try:
            result = engine.save_state(self.disk)
        except OSError as e:  # the folder itself cannot be made or read
            self.events.cache_note(f"The chat's cache could not be saved to disk: {e}")
            return
        if result.note:
            self.events.cache_note(f"The chat's cache was not saved to disk: {result.note}.")
        if result.outcome == "written":
            self._report_usage()

    def _restore(self) -> None:
        engine = self._local_engine()
        if engine is None or self.disk is None or self._shown is None:
            return
        try:
            found = engine.restore_state(self.disk, self._shown)
        except (EngineError, OSError) as e:
            self.events.cache_note(f"The chat's saved cache could not be read: {e}")
            return
        if found.note:
            self.events.cache_note(f"{found.note[:1].upper()}{found.note[1:]}.")
            self._report_usage()

    def _report_usage(self) -> None:
        if self.disk is not None:
            self.events.disk_usage(self.disk.usage())
