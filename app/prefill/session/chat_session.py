"""The conversation's side of the app, without Qt: what answers, its cache on disk, and serving.

`ChatSession` decides what the window's engine worker used to decide: which backend answers (a
model file, a remote endpoint, a slot of the server while the model is served), saving a
conversation's KV cache as the user leaves it and restoring it on return, and handing the
model to the server and back. One thread uses a session at a time (the window's engine thread,
or the terminal's main thread); what it reports on its own goes to `SessionEvents`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prefill.engine.batch.snapshot import BatchSnapshot
from prefill.engine.chat_backend import Event
from prefill.engine.errors import EngineError
from prefill.engine.events import MetricsSnapshot
from prefill.engine.local.kv_disk import KvDiskCache, Usage
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.server.lifecycle import ExposureError, RunningServer, ServeOptions, check_exposure
from prefill.session.backends import LocalModel, ServerSlot, Target, describe, open_backend
from prefill.session.capabilities import ChatBackend, KeepsCacheOnDisk
from prefill.session.loaded import LoadedModel


def _ignore(*_args: object) -> None:
    return None


@dataclass
class SessionEvents:
    """What a session reports between requests; each runs on the session's thread and must not block."""

    cache_note: Callable[[str], None] = _ignore  # a saved cache was discarded or not saved, and why
    disk_usage: Callable[[Usage], None] = _ignore  # the saved-cache folder changed
    server_snapshot: Callable[[BatchSnapshot], None] | None = None  # the slots, live, while serving
    serve_stopped: Callable[[], None] = _ignore  # the server stopped
    reload_failed: Callable[[str], None] = _ignore  # the model could not be loaded again after serving


class NoModel(EngineError):
    """Nothing is loaded to answer."""


class ServeRefused(Exception):
    """The server could not start; the sentence says why (the chat goes on as before)."""


class ChatSession:
    """What answers the conversation now, and what goes with it."""

    def __init__(self, disk: KvDiskCache | None = None, events: SessionEvents | None = None) -> None:
        self.disk = disk  # None: no saved caches (tests, the terminal)
        self.events = events or SessionEvents()
        self.backend: ChatBackend | None = None
        self.server: RunningServer | None = None  # while the model is served; the chat is then its slot
        self._local: LocalModel | None = None  # the model file loaded (to serve and reload it)
        self._shown: list[Message] | None = None  # the conversation the user is in, for after a load

    # --- what answers ------------------------------------------------------------------
    def load(self, target: Target, progress: Callable[[float], bool] | None = None,
             keep: Callable[[], bool] = lambda: True) -> LoadedModel | None:
        """Unload what answers, then open `target`; None when `keep()` says no once it is open
        (superseded or cancelled meanwhile: it is closed again).

        Raises:
            ModelLoadError, RemoteError, OSError, ValueError: it could not be opened.
        """
        self.unload()
        t0 = time.perf_counter()
        backend = open_backend(target, progress)
        if not keep():
            backend.close()
            return None
        self.backend = backend
        self._local = target if isinstance(target, LocalModel) else None
        info = describe(backend, target, (time.perf_counter() - t0) * 1000)
        self._restore()
        return info

    def unload(self) -> None:
        """Stop serving, save the chat's cache, free the model (or close the endpoint)."""
        self._stop_server()
        if self.backend is not None:
            self._save()
            self.backend.close()
            self.backend = None
        self._local = None

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
        if self.server is not None:
            return self.server.url
        if self._local is None or self.backend is None:
            raise ServeRefused("Load a local model first: a remote endpoint is served by its own machine.")
        try:
            check_exposure(options.host, options.api_key)
        except ExposureError as e:
            raise ServeRefused(f"The server could not start: {e}") from None
        local = self._local
        self._save()
        self.backend.close()  # one copy of the model: the server's, with a slot for this chat
        self.backend = None
        try:
            server = RunningServer.open(options, on_snapshot=self.events.server_snapshot)
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

    def _stop_server(self) -> None:
        server, self.server = self.server, None
        if server is None:
            return
        self.backend = None  # its slot goes with the scheduler
        server.stop()  # frees the model
        self.events.serve_stopped()

    def _reload(self, local: LocalModel) -> None:
        try:
            self.backend = open_backend(local)
        except (EngineError, OSError, ValueError) as e:
            self._local = None
            self.events.reload_failed(str(e))
            return
        self._restore()

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
        if engine is None or self.disk is None:
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
