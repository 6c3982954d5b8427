"""The one owner of the model: a QObject on its own QThread.

Requests arrive as queued signals; results leave as signals. Streamed text is
not sent as one signal per token: the worker appends it to a locked buffer and
the GUI thread takes it on its own ~30 ms timer (`take_text`), so a fast model
costs the GUI one wake-up per flush, not per token, and the worker never waits
for the GUI thread to run Python.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QThread, Signal, Slot

from prefill.engine.chat_backend import ChatBackend
from prefill.engine.errors import ContextOverflow, EngineError, TemplateError
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.kv_disk import KvDiskCache
from prefill.engine.message import Message
from prefill.engine.settings import LoadSettings, OverflowSettings, SamplingSettings
from prefill.engine.template import TemplateOptions
from prefill.remote.errors import RemoteError
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.remote_messages import remote_error_text

if TYPE_CHECKING:
    from prefill.engine.chat import ChatEngine
    from prefill.remote.engine import RemoteEngine
    from prefill.server.runner import RunningServer, ServeOptions


@dataclass(frozen=True)
class LoadedModel:
    path: Path
    name: str
    n_ctx: int
    n_layer: int
    backend_summary: str
    backend_warning: str
    gpu_build: bool
    load_ms: float
    bytes_per_cell: int
    model_bytes: int
    chat_format: str = "template"  # "template", a llama.cpp built-in format's name, or "base"
    chat_format_label: str = ""  # where the format came from, in words
    takes_thinking_switch: bool = False  # the template reads enable_thinking
    takes_reasoning_effort: bool = False  # the template reads reasoning_effort (gpt-oss)
    reasons: bool = False  # the model has reasoning markers (its thinking is shown apart)
    remote: str = ""  # served by this endpoint (its API root); path is then empty
    endpoint: str = ""  # the saved endpoint's name

    @property
    def format_from_model(self) -> bool:
        return self.chat_format == "template"

    @property
    def source(self) -> str:
        """Where the answers come from: the model file, or the endpoint and its model."""
        return f"{self.remote} · {self.name}" if self.remote else str(self.path)


class TextBuffer:
    """Tokens' text from the worker to the GUI thread, swapped under a lock; the answer and the
    model's thinking kept apart."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self._thinking: list[str] = []

    def put(self, text: str, reasoning: bool = False) -> None:
        with self._lock:
            (self._thinking if reasoning else self._parts).append(text)

    def take(self) -> str:
        """The answer's text since the last take (any thinking taken with it is dropped)."""
        return self.take_both()[1]

    def take_both(self) -> tuple[str, str]:
        """(thinking, answer) text since the last take."""
        with self._lock:
            parts, self._parts = self._parts, []
            thinking, self._thinking = self._thinking, []
        return "".join(thinking), "".join(parts)


class EngineWorker(QObject):
    """Owns the ChatEngine; lives on the engine thread.

    The GUI thread asks through the typed methods (`load`, `load_remote`, `cancel_load`, `generate`,
    `unload`, `ask_count`, `serve`, `stop_serving`); each queues one request signal into the engine
    thread. What answers is a `ChatBackend`: the local model, a slot of the server's batch while
    the model is served (the window's chat is then one of the server's requests), or a remote endpoint.

    Signals:
        load_progress(float): 0..1 while a model loads.
        loaded(object): a LoadedModel, after a load succeeded.
        load_failed(str): why a load failed, in words.
        load_cancelled(int): the tag `load` returned; that load was cancelled or superseded
            (the model it replaced is unloaded).
        prefill_done(int, object): request id, PrefillDone.
        metrics(int, object): request id, MetricsSnapshot (a few times a second).
        finished(int, object): request id, Finished (its text is the whole answer).
        failed(int, str): request id, a sentence for the user.
        token_count(int, int): request tag, prompt tokens of a conversation (for the input box).
        kv_state(object): MetricsSnapshot with the KV fill, when idle.
        disk_cache(object): kv_disk.Usage of the saved-cache folder, after it changed.
        cache_note(str): a saved cache was discarded or could not be saved, and why.
        serving(str): the server's base address (http://host:port); the chat now runs in one of its slots.
        serve_failed(str): why the server could not start, in words (the chat goes on as before).
        serve_stopped(): the server stopped; the chat has the model to itself again.
        server_snapshot(object): a BatchSnapshot, a few times a second while the server runs.
    """

    load_progress = Signal(float)
    loaded = Signal(object)
    load_failed = Signal(str)
    load_cancelled = Signal(int)
    prefill_done = Signal(int, object)
    metrics = Signal(int, object)
    finished = Signal(int, object)
    failed = Signal(int, str)
    token_count = Signal(int, int)
    kv_state = Signal(object)
    disk_cache = Signal(object)
    cache_note = Signal(str)
    serving = Signal(str)
    serve_failed = Signal(str)
    serve_stopped = Signal()
    server_snapshot = Signal(object)

    # requests, queued into the worker's thread: use the typed methods below
    _request_load = Signal(int, str, object)
    _request_load_remote = Signal(int, object)
    _request_serve = Signal(object)
    _request_stop_serving = Signal()
    _request_generate = Signal(int, object, object, object, object)
    _request_count = Signal(int, object)
    _request_unload = Signal()
    request_shutdown = Signal()
    request_resume = Signal(object)  # the messages of the conversation now shown ([] for a new one)
    request_cache_budget = Signal(object)  # bytes (an int past 2 GiB: not a Qt int); 0 turns it off
    request_clear_cache = Signal()

    def __init__(self, disk: KvDiskCache | None = None) -> None:
        super().__init__()
        self.engine: ChatBackend | None = None
        self.server: RunningServer | None = None  # while the model is served; the chat is then its slot
        self._local: tuple[str, LoadSettings] | None = None  # the local model loaded (to serve and reload it)
        self.disk = disk  # None: no saved caches (tests, or a caller that wants none)
        self._shown: list[Message] | None = None  # the conversation the user is in, for after a load
        self.cancel = threading.Event()  # set from the GUI thread: stop after the current token
        self.buffer = TextBuffer()
        self._count_tag = 0
        self._load_tags = itertools.count(1)
        # The load the GUI thread still wants (0: none). The GUI thread writes it, the load's
        # progress callback reads it: llama.cpp abandons a load when the callback says False.
        self._wanted_load = 0
        self._request_load.connect(self._on_request_load)
        self._request_load_remote.connect(self._on_request_load_remote)
        self._request_serve.connect(self._on_request_serve)
        self._request_stop_serving.connect(self._on_request_stop_serving)
        self._request_generate.connect(self._on_request_generate)
        self._request_count.connect(self._on_request_count)
        self._request_unload.connect(self._on_request_unload)
        self.request_shutdown.connect(self._on_request_shutdown)
        self.request_resume.connect(self._on_request_resume)
        self.request_cache_budget.connect(self._on_request_cache_budget)
        self.request_clear_cache.connect(self._on_request_clear_cache)

    # --- requests, from the GUI thread ---------------------------------------------
    def load(self, path: str, settings: LoadSettings) -> int:
        """Load a model (after unloading the current one); a newer load supersedes this one.

        Returns:
            The tag `load_cancelled` names if this load is cancelled.
        """
        tag = next(self._load_tags)
        self._wanted_load = tag
        self._request_load.emit(tag, path, settings)
        return tag

    def load_remote(self, endpoint: SavedEndpoint) -> int:
        """Chat through a remote endpoint (after unloading the local model); as `load`, a newer load
        supersedes it. `loaded` then carries `remote` and `n_ctx` 0 (the remote's context is not known)."""
        tag = next(self._load_tags)
        self._wanted_load = tag
        self._request_load_remote.emit(tag, endpoint)
        return tag

    def serve(self, options: ServeOptions) -> None:
        """Serve the loaded local model over HTTP; the window's chat becomes one of its slots."""
        self._request_serve.emit(options)

    def stop_serving(self) -> None:
        """Stop the server (streams in flight get a few seconds) and give the chat the model back."""
        self._request_stop_serving.emit()

    def cancel_load(self) -> None:
        """Stop the load in progress at its next progress report (and any queued one)."""
        self._wanted_load = 0

    def generate(
        self, request_id: int, messages: list[Message], sampling: SamplingSettings, overflow: OverflowSettings,
        options: TemplateOptions | None = None,
    ) -> None:
        """Answer `messages`; events come back tagged with `request_id`. `cancel` stops it.
        `options`: the template's switches (thinking, reasoning effort)."""
        self._request_generate.emit(request_id, messages, sampling, overflow, options or TemplateOptions())

    def unload(self) -> None:
        """Free the model."""
        self._request_unload.emit()

    def ask_count(self, tag: int, messages: list[Message]) -> None:
        """Count the prompt tokens of `messages`; only the newest count request is computed."""
        self._count_tag = tag
        self._request_count.emit(tag, messages)

    # --- slots, run on the engine thread ------------------------------------------
    @Slot(int, str, object)
    def _on_request_load(self, tag: int, path: str, settings: LoadSettings) -> None:
        self._on_request_unload()  # the window forgot it when it asked for this load
        if tag != self._wanted_load:  # cancelled or superseded while it waited
            self.load_cancelled.emit(tag)
            return
        t0 = time.perf_counter()
        from prefill.engine.chat import ChatEngine  # llama.cpp loads here, off the GUI thread

        def progress(p: float) -> bool:
            self.load_progress.emit(p)
            return tag == self._wanted_load

        try:
            engine = ChatEngine.load(path, settings, progress=progress)
        except (EngineError, OSError, ValueError) as e:
            if tag != self._wanted_load:
                self.load_cancelled.emit(tag)
            else:
                self.load_failed.emit(str(e))
            return
        if tag != self._wanted_load:  # cancelled after the last progress report
            engine.close()
            self.load_cancelled.emit(tag)
            return
        self.engine = engine
        self._local = (path, settings)
        self.loaded.emit(
            LoadedModel(
                path=Path(path),
                name=engine.header.name or Path(path).stem,
                n_ctx=engine.n_ctx,
                n_layer=engine.header.n_layer,
                backend_summary=engine.backend.summary,
                backend_warning=engine.backend.warning,
                gpu_build=engine.backend.gpu_build,
                load_ms=(time.perf_counter() - t0) * 1000,
                bytes_per_cell=engine.bytes_per_cell,
                model_bytes=engine.runtime.model_bytes(),
                chat_format=engine.format.name,
                chat_format_label=engine.format.label,
                takes_thinking_switch=engine.format.takes_thinking_switch,
                takes_reasoning_effort=engine.format.takes_reasoning_effort,
                reasons=bool(engine.reasoning),
            )
        )
        self._restore()
        self.kv_state.emit(engine.kv_snapshot())

    @Slot(int, object)
    def _on_request_load_remote(self, tag: int, endpoint: SavedEndpoint) -> None:
        self._on_request_unload()
        if tag != self._wanted_load:
            self.load_cancelled.emit(tag)
            return
        t0 = time.perf_counter()
        from prefill.remote.engine import RemoteEngine  # the HTTP client loads here, off the GUI thread

        try:
            engine = RemoteEngine(endpoint.url, endpoint.model, endpoint.api_key)
        except RemoteError as e:
            self.load_failed.emit(remote_error_text(e))
            return
        try:
            model = engine.resolve_model()
        except RemoteError as e:
            engine.close()
            self.load_failed.emit(remote_error_text(e))
            return
        if tag != self._wanted_load:
            engine.close()
            self.load_cancelled.emit(tag)
            return
        self.engine = engine
        self.loaded.emit(remote_model(engine, model, endpoint.name, (time.perf_counter() - t0) * 1000))
        self.kv_state.emit(engine.kv_snapshot())

    @Slot()
    def _on_request_unload(self) -> None:
        self._stop_server()
        if self.engine is not None:
            self._save()
            self.engine.close()
            self.engine = None
        self._local = None

    # --- serving the model: the window's chat as one of the server's slots -----------------
    @Slot(object)
    def _on_request_serve(self, options: ServeOptions) -> None:
        if self.server is not None:
            self.serving.emit(self.server.url)
            return
        if self._local is None or self.engine is None:
            self.serve_failed.emit("Load a local model first: a remote endpoint is served by its own machine.")
            return
        from prefill.engine.slot_chat import SlotChat
        from prefill.server.runner import ExposureError, RunningServer, check_exposure

        try:
            check_exposure(options.host, options.api_key)
        except ExposureError as e:
            self.serve_failed.emit(f"The server could not start: {e}")
            return
        path, settings = self._local
        self._save()
        self.engine.close()  # one copy of the model: the server's, with a slot for this chat
        self.engine = None
        try:
            server = RunningServer.open(options, on_snapshot=self.server_snapshot.emit)
        except (EngineError, OSError, ValueError) as e:
            self.serve_failed.emit(f"The server could not start: {e}")
            self._reload_local(path, settings)
            return
        server.start_thread()
        self.server = server
        self.engine = SlotChat(server.scheduler)
        self.serving.emit(server.url)
        self.kv_state.emit(self.engine.kv_snapshot())

    @Slot()
    def _on_request_stop_serving(self) -> None:
        if self.server is None:
            self.serve_stopped.emit()
            return
        self._stop_server()
        if self._local is not None:
            self._reload_local(*self._local)

    def _stop_server(self) -> None:
        server, self.server = self.server, None
        if server is None:
            return
        self.engine = None  # its slot goes with the scheduler
        server.stop()  # frees the model
        self.serve_stopped.emit()

    def _reload_local(self, path: str, settings: LoadSettings) -> None:
        """The chat's own copy of the model again, after serving (or a server that failed to start)."""
        from prefill.engine.chat import ChatEngine

        try:
            self.engine = ChatEngine.load(path, settings)
        except (EngineError, OSError, ValueError) as e:
            self._local = None
            self.load_failed.emit(str(e))
            return
        self._restore()
        self.kv_state.emit(self.engine.kv_snapshot())

    # --- the KV cache on disk: saved as the user leaves a conversation, restored on return ----
    @Slot(object)
    def _on_request_resume(self, messages: list[Message]) -> None:
        """The user now shows `messages`: save the cache of the chat they left, restore this one's."""
        self._shown = list(messages)
        if self.engine is not None:
            self._save()
            self._restore()
            self.kv_state.emit(self.engine.kv_snapshot())

    def _local_engine(self) -> ChatEngine | None:
        """The chat's own copy of the model, when that is what answers (it has a cache to save)."""
        from prefill.engine.chat import ChatEngine

        return self.engine if isinstance(self.engine, ChatEngine) else None

    def _save(self) -> None:
        engine = self._local_engine()
        if engine is None or self.disk is None:
            return
        try:
            result = engine.save_state(self.disk)
        except OSError as e:  # the folder itself cannot be made or read
            self.cache_note.emit(f"The chat's cache could not be saved to disk: {e}")
            return
        if result.note:
            self.cache_note.emit(f"The chat's cache was not saved to disk: {result.note}.")
        if result.outcome == "written":
            self._report_usage()

    def _restore(self) -> None:
        engine = self._local_engine()
        if engine is None or self.disk is None or self._shown is None:
            return
        try:
            found = engine.restore_state(self.disk, self._shown)
        except (EngineError, OSError) as e:
            self.cache_note.emit(f"The chat's saved cache could not be read: {e}")
            return
        if found.note:
            self.cache_note.emit(f"{found.note[:1].upper()}{found.note[1:]}.")
            self._report_usage()

    def _report_usage(self) -> None:
        if self.disk is not None:
            self.disk_cache.emit(self.disk.usage())

    @Slot(object)
    def _on_request_cache_budget(self, budget: int) -> None:
        if self.disk is not None:
            self.disk.budget = budget
            self.disk.evict()
            self._report_usage()

    @Slot()
    def _on_request_clear_cache(self) -> None:
        if self.disk is not None:
            self.disk.clear()
            self._report_usage()

    @Slot()
    def _on_request_shutdown(self) -> None:
        """The last request: after everything queued before it, free the model and end the thread."""
        self._on_request_unload()
        QThread.currentThread().quit()

    @Slot(int, object, object, object, object)
    def _on_request_generate(
        self, request_id: int, messages: list[Message], sampling: SamplingSettings, overflow: OverflowSettings,
        options: TemplateOptions,
    ) -> None:
        engine = self.engine
        if engine is None:
            self.failed.emit(request_id, "No model is loaded yet.")
            return
        put = self.buffer.put
        self._shown = list(messages)
        try:
            for ev in engine.stream(messages, sampling, overflow, self.cancel, options):
                if type(ev) is Token:
                    put(ev.text, ev.reasoning)
                elif isinstance(ev, MetricsSnapshot):
                    self.metrics.emit(request_id, ev)
                elif isinstance(ev, PrefillDone):
                    self.prefill_done.emit(request_id, ev)
                elif isinstance(ev, Finished):
                    self.finished.emit(request_id, ev)
        except ContextOverflow as e:
            self.failed.emit(
                request_id,
                f"The conversation is {e.over} tokens too long for the {e.n_ctx}-token context "
                f"({e.prompt_tokens} in the prompt + {e.reserved} kept for the answer). "
                "Start a new chat, delete earlier messages, or pick another overflow policy.",
            )
        except TemplateError as e:
            self.failed.emit(request_id, f"The model's chat template could not write this prompt: {e}")
        except RemoteError as e:
            if e.partial or e.partial_reasoning:  # kept, and marked as cut short
                cut = Finished("error", e.partial, MetricsSnapshot(finish_reason="error"), e.partial_reasoning,
                               remote_error_text(e))
                self.finished.emit(request_id, cut)
            else:
                self.failed.emit(request_id, remote_error_text(e))
        except EngineError as e:
            self.failed.emit(request_id, f"Generation failed: {e}")
        self.kv_state.emit(engine.kv_snapshot())

    @Slot(int, object)
    def _on_request_count(self, tag: int, messages: list[Message]) -> None:
        if tag != self._count_tag or self.engine is None:
            return  # a newer count was asked for meanwhile
        try:
            n = self.engine.count_tokens(messages)
        except (EngineError, ValueError):
            return
        if n is not None:  # None: a remote writes its own prompt
            self.token_count.emit(tag, n)


class EngineThread:
    """Starts the worker on its own thread and stops it cleanly (ask, quit, wait)."""

    def __init__(self, disk: KvDiskCache | None = None) -> None:
        self.thread = QThread()
        self.thread.setObjectName("prefill-engine")
        self.worker = EngineWorker(disk)
        self.worker.moveToThread(self.thread)
        self.thread.start()

    def stop(self) -> None:
        """Ask: stop a load at its next progress report and the answer after its current
        token, then save the cache and free the model; quit; wait."""
        self.worker.cancel_load()
        self.worker.cancel.set()
        self.worker.request_shutdown.emit()
        self.thread.wait()


def remote_model(engine: RemoteEngine, model: str, endpoint: str, load_ms: float) -> LoadedModel:
    """What the window shows of a remote endpoint: its model and address; what it cannot see is 0."""
    return LoadedModel(
        path=Path(), name=model, n_ctx=0, n_layer=0, backend_summary=f"remote: {engine.base}",
        backend_warning="", gpu_build=False, load_ms=load_ms, bytes_per_cell=0, model_bytes=0,
        chat_format="remote", chat_format_label="written by the remote server", remote=engine.base,
        endpoint=endpoint,
    )
