"""The one owner of the model: a QObject on its own QThread, relaying to a `ChatSession`.

What answers, the cache on disk and serving are decided by the Qt-free `session.ChatSession`;
this worker moves requests onto the engine thread (queued signals) and results back (signals).
Streamed text is not sent as one signal per token: the worker appends it to a locked buffer and
the GUI thread takes it on its own ~30 ms timer (`take_streamed`), so a fast model costs the GUI one
wake-up per flush, not per token, and the worker never waits for the GUI thread to run Python.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from prefill.engine.errors import ContextOverflow, EngineError, TemplateError
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.local.kv_disk import KvDiskCache
from prefill.engine.message import Message, ToolCall
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings
from prefill.remote.errors import RemoteError
from prefill.session.compaction import CompactionError, summarise
from prefill.session.tool_loop import (
    DEFAULT_MAX_ROUNDS,
    Decision,
    LoopFinished,
    ToolApprovals,
    ToolCallDone,
    ToolCallStarted,
    ToolRunner,
    run_tool_loop,
)
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.workers.remote_messages import remote_error_text
from prefill.ui.workers.tool_gate import ApprovalGate

if TYPE_CHECKING:
    from prefill.engine.speculation import Speculation
    from prefill.server.lifecycle import RunningServer, ServeOptions
    from prefill.session.backends import Target
    from prefill.session.capabilities import ChatBackend
    from prefill.session.chat_session import ChatSession
    from prefill.session.conversation import Conversation
    from prefill.session.document_chats import ChatDocs, DocumentChats



REAPER_MAX_MS = 2**31 - 1  # a QTimer's interval is a C int: a longer wait is armed again when it fires


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
    """Relays between the GUI thread and the session that owns the model; lives on the engine thread.

    The GUI thread asks through the typed methods (`load`, `load_remote`, `cancel_load`, `generate`,
    `generate_with_documents`, `compact`, `unload`, `serve`, `stop_serving`, `resume`,
    `set_cache_budget`, `clear_cache`, `set_speculation`, `set_model_limits`, `unload_model`, `pin_model`,
    `shutdown`); each queues one private request signal into the engine thread, where the `ChatSession`
    (made there, so llama.cpp loads off the GUI thread) does the work. An idle model's time to live is
    kept by a timer on the engine thread, armed after each change of the resident models. A few act at once,
    thread-safe, without a queue: `take_streamed`, `stop_answer`, `answer_tool`, `forget_approvals`,
    `use_tools`, `use_documents`.

    Signals:
        load_progress(float): 0..1 while a model loads.
        loaded(object): a LoadedModel, after a load succeeded.
        load_failed(str): why a load failed, in words.
        load_cancelled(int): the tag `load` returned; that load was cancelled or superseded
            (the model it replaced stays resident, idle).
        residents_changed(object): a session.residents.ResidentModels: the local models in memory,
            their memory, which is pinned and which is the chat's, and the budget (after a load, an
            unload, a pin, new limits, an idle model's time to live running out).
        resident_refused(str): an unload by hand was refused (the chat's own model), in words.
        prefill_done(int, object): request id, PrefillDone.
        metrics(int, object): request id, MetricsSnapshot (a few times a second).
        finished(int, object): request id, Finished (its text is the whole answer).
        failed(int, str): request id, a sentence for the user.
        kv_state(object): MetricsSnapshot with the KV fill, when idle.
        disk_cache(object): kv_disk.Usage of the saved-cache folder, after it changed.
        cache_note(str): a saved cache was discarded or could not be saved, and why.
        serving(str): the server's base address (http://host:port); the chat now runs in one of its slots.
        serve_failed(str): why the server could not start, in words (the chat goes on as before).
        serve_stopped(): the server stopped; the chat has the model to itself again.
        server_snapshot(object): a server.served_slots.ServerSlots (each model the server holds, its state
            and its slots), a few times a second while the server runs.
        tool_asked(int, int, object): request id, question serial, ToolCall: the engine thread waits
            for `answer_tool(serial, decision)` (Stop answers DENY).
        tool_started(int, object): request id, ToolCallStarted (an approved call runs now).
        tool_done(int, object): request id, ToolCallDone (run, denied, stopped or not run).
        tool_loop_finished(int, object): request id, LoopFinished (before `finished`, which then
            carries the last round's Finished).
        speculation_refused(str): the draft model was refused, or the served slots cannot speculate,
            in words; speculation is off there.
        compacted(int, object): request id, the compaction.Summary the model wrote (`compact`).
        compaction_failed(int, str): request id, why no summary was made, in words (the chat is as it was).
        retrieved(int, object): request id, a document_chats.Retrieved: what the chat's documents did for
            the question (before its answer streams), and the sources the answer may cite.

    A request with tools (and a `tool_runner` set) runs the tool loop (`session/tool_loop.py`) on the
    engine thread: per round the model's answer streams into the buffer as usual; `finished` comes
    once, at the turn's end.
    """

    load_progress = Signal(float)
    loaded = Signal(object)
    load_failed = Signal(str)
    load_cancelled = Signal(int)
    prefill_done = Signal(int, object)
    metrics = Signal(int, object)
    finished = Signal(int, object)
    failed = Signal(int, str)
    kv_state = Signal(object)
    disk_cache = Signal(object)
    cache_note = Signal(str)
    serving = Signal(str)
    serve_failed = Signal(str)
    serve_stopped = Signal()
    server_snapshot = Signal(object)
    tool_asked = Signal(int, int, object)
    tool_started = Signal(int, object)
    tool_done = Signal(int, object)
    tool_loop_finished = Signal(int, object)
    speculation_refused = Signal(str)
    compacted = Signal(int, object)
    compaction_failed = Signal(int, str)
    retrieved = Signal(int, object)
    residents_changed = Signal(object)
    resident_refused = Signal(str)

    # requests, queued into the worker's thread: the typed methods below emit them
    _request_load = Signal(int, object)
    _request_serve = Signal(object)
    _request_stop_serving = Signal()
    _request_generate = Signal(int, object)
    _request_documents = Signal(int, object, object)
    _request_compact = Signal(int, object, int)
    _request_unload = Signal()
    _request_shutdown = Signal()
    _request_resume = Signal(object)
    _request_cache_budget = Signal(object)  # bytes (an int past 2 GiB: not a Qt int)
    _request_clear_cache = Signal()
    _request_speculative = Signal(object)
    _request_unload_model = Signal(str)
    _request_pin_model = Signal(str, bool)
    _request_model_limits = Signal(object)  # (budget, max_models, ttl_s): bytes past a Qt int

    def __init__(self, disk: KvDiskCache | None = None) -> None:
        super().__init__()
        self.disk = disk  # None: no saved caches (tests, or a caller that wants none)
        self._session: ChatSession | None = None  # made on the engine thread, at its first request
        self.cancel = threading.Event()  # set from the GUI thread: stop after the current token
        self.buffer = TextBuffer()
        self._load_tags = itertools.count(1)
        # The load the GUI thread still wants (0: none). The GUI thread writes it, the load's
        # progress callback reads it: llama.cpp abandons a load when the callback says False.
        self._wanted_load = 0
        # Tools: what runs a call (set from the GUI thread once the servers are known; read on the
        # engine thread at the start of a turn), the tools always allowed, and the approval gate.
        self.tool_runner: ToolRunner | None = None
        self.approvals = ToolApprovals()
        self.max_tool_rounds = DEFAULT_MAX_ROUNDS
        self.gate = ApprovalGate()
        # Speculative decoding: what a load asks for (GUI thread), and what the engine has (engine thread).
        self.speculation: Speculation | None = None
        self._speculating: Speculation | None = None
        self.documents: DocumentChats | None = None  # the chats' documents (set from the GUI thread once)
        self._request_load.connect(self._on_request_load)
        self._request_serve.connect(self._on_request_serve)
        self._request_stop_serving.connect(self._on_request_stop_serving)
        self._request_generate.connect(self._on_request_generate)
        self._request_documents.connect(self._on_request_documents)
        self._request_compact.connect(self._on_request_compact)
        self._request_unload.connect(self._on_request_unload)
        self._request_shutdown.connect(self._on_request_shutdown)
        self._request_resume.connect(self._on_request_resume)
        self._request_cache_budget.connect(self._on_request_cache_budget)
        self._request_clear_cache.connect(self._on_request_clear_cache)
        self._request_speculative.connect(self._on_request_speculative)
        self._request_unload_model.connect(self._on_request_unload_model)
        self._request_pin_model.connect(self._on_request_pin_model)
        self._request_model_limits.connect(self._on_request_model_limits)
        # Unloads an idle model whose time to live ran out; moves to the engine thread with the worker
        # and is armed there, after each change of the residents, for the next one due.
        self._reaper = QTimer(self)
        self._reaper.setSingleShot(True)
        self._reaper.timeout.connect(self._on_reaper_timeout)

    @property
    def session(self) -> ChatSession:
        """The session; made on first use, on the engine thread (llama.cpp comes with the first load)."""
        if self._session is None:
            from prefill.session.chat_session import ChatSession, SessionEvents

            self._session = ChatSession(self.disk, SessionEvents(
                cache_note=self.cache_note.emit, disk_usage=self.disk_cache.emit,
                server_snapshot=self.server_snapshot.emit, serve_stopped=self.serve_stopped.emit,
                reload_failed=self.load_failed.emit, residents=self._on_session_residents,
            ))
        return self._session

    @property
    def engine(self) -> ChatBackend | None:
        """What answers now (engine thread, or tests between requests)."""
        return self._session.backend if self._session is not None else None

    @property
    def server(self) -> RunningServer | None:
        return self._session.server if self._session is not None else None

    # --- requests, from the GUI thread ---------------------------------------------
    def load(self, path: str, settings: LoadSettings) -> int:
        """Make a model the chat's: one still in memory is taken as it is (`loaded` carries `resident`),
        else it is loaded, the one it replaces kept in memory while the budget allows; a newer load
        supersedes this one.

        Returns:
            The tag `load_cancelled` names if this load is cancelled.
        """
        from prefill.engine.speculation import Speculation
        from prefill.session.backends import BESIDE, LocalModel

        return self._load(LocalModel(path, settings, self.speculation or Speculation(), mmproj=BESIDE))

    def load_remote(self, endpoint: SavedEndpoint) -> int:
        """Chat through a remote endpoint (the local model stays in memory, idle); as `load`, a newer load
        supersedes it. `loaded` then carries `remote` and `n_ctx` 0 (the remote's context is not known)."""
        from prefill.session.backends import RemoteEndpoint

        return self._load(RemoteEndpoint(endpoint.url, endpoint.model, endpoint.api_key, endpoint.name))

    def _load(self, target: Target) -> int:
        tag = next(self._load_tags)
        self._wanted_load = tag
        self._request_load.emit(tag, target)
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

    def generate(self, request_id: int, request: ChatRequest) -> None:
        """Answer `request`; events come back tagged with `request_id`. `stop_answer` stops it."""
        self.buffer.take_both()  # nothing stale from an earlier answer
        self.cancel.clear()
        self._request_generate.emit(request_id, request)

    def generate_with_documents(self, request_id: int, conversation: Conversation, docs: ChatDocs,
                                chat: int | None = None) -> None:
        """Answer the question `conversation` ends with through the chat's documents (`use_documents`): whole
        where they fit, else with passages retrieved for it, on the engine thread (it counts tokens with the
        model and may wait for the collection's indexing); `retrieved` comes first, then as `generate`.
        `chat`: the chat's history id (each decides for itself whether its documents fit whole)."""
        self.buffer.take_both()
        self.cancel.clear()
        self._request_documents.emit(request_id, conversation, (docs, chat))

    def use_documents(self, chats: DocumentChats | None) -> None:
        """What asks the chats' documents from now on (None: none)."""
        self.documents = chats

    def compact(self, request_id: int, request: ChatRequest, n_ctx: int) -> None:
        """Have the model summarise `request`'s conversation in a context of `n_ctx` (the summary
        streams into no buffer); `compacted` or `compaction_failed` answers, tagged with `request_id`.
        `stop_answer` stops it."""
        self.cancel.clear()
        self._request_compact.emit(request_id, request, n_ctx)

    def take_streamed(self) -> tuple[str, str]:
        """The thinking and the text streamed since the last take (GUI thread)."""
        return self.buffer.take_both()

    def stop_answer(self) -> None:
        """Stop the answer or summary in progress after its current token: a tool question waiting is
        answered DENY, a running tool is told."""
        self.cancel.set()

    def forget_approvals(self) -> None:
        """Ask again before every tool ("always allow" holds for the chat it was said in)."""
        self.approvals.forget()

    def answer_tool(self, serial: int, decision: Decision) -> None:
        """The person's answer to question `serial` of `tool_asked`; never blocks."""
        self.gate.answer(serial, decision)

    def unload(self) -> None:
        """Free the chat's model (the other resident ones stay)."""
        self._request_unload.emit()

    def unload_model(self, path: str) -> None:
        """Unload a resident model that is not the chat's; `residents_changed` follows (or
        `resident_refused`). Queued behind a running answer, so a model generating is never unloaded."""
        self._request_unload_model.emit(path)

    def pin_model(self, path: str, pinned: bool) -> None:
        """Pin a resident model (never unloaded to make room for another) or unpin it."""
        self._request_pin_model.emit(path, pinned)

    def set_model_limits(self, budget: int | None, max_models: int, ttl_s: float | None) -> None:
        """The resident models' limits (as `ChatSession` takes them), in force at once: idle models past
        them are unloaded (never the chat's, queued behind a running answer); `residents_changed` follows."""
        self._request_model_limits.emit((budget, max_models, ttl_s))

    def resume(self, messages: list[Message]) -> None:
        """The conversation now shown ([] for a new one): its saved cache is restored, the last one's saved."""
        self._request_resume.emit(list(messages))

    def use_tools(self, runner: ToolRunner | None) -> None:
        """What runs a tool call from now on (None: no tools); read on the engine thread at a turn's start."""
        self.tool_runner = runner

    def set_max_tool_rounds(self, rounds: int) -> None:
        """How many rounds of tool calls a turn may make, from the next turn on."""
        self.max_tool_rounds = rounds

    def set_cache_budget(self, budget: int) -> None:
        """Bytes the saved caches may take on disk; 0 turns saving off."""
        self._request_cache_budget.emit(budget)

    def clear_cache(self) -> None:
        """Delete every saved cache."""
        self._request_clear_cache.emit()

    def set_speculation(self, wanted: Speculation) -> None:
        """Speculative decoding for the loaded model, set without a reload (a draft model is loaded or
        freed beside it), and for the models loaded next."""
        self.speculation = wanted
        self._request_speculative.emit(wanted)

    def shutdown(self) -> None:
        """The last request: after everything queued before it, free the model and end the thread."""
        self._request_shutdown.emit()

    # --- slots, run on the engine thread ------------------------------------------
    @Slot(int, object)
    def _on_request_load(self, tag: int, target: Target) -> None:
        session = self.session
        session.step_aside()  # the window forgot it when it asked for this load; it stays resident
        if tag != self._wanted_load:  # cancelled or superseded while it waited
            self.load_cancelled.emit(tag)
            return

        def progress(p: float) -> bool:
            self.load_progress.emit(p)
            return tag == self._wanted_load

        try:
            info = session.load(target, progress, keep=lambda: tag == self._wanted_load)
        except RemoteError as e:
            self.load_failed.emit(remote_error_text(e))
            return
        except (EngineError, OSError, ValueError) as e:
            if tag != self._wanted_load:
                self.load_cancelled.emit(tag)
            else:
                self.load_failed.emit(str(e))
            return
        if info is None:  # cancelled after the last progress report
            self.load_cancelled.emit(tag)
            return
        self.loaded.emit(info)
        self._speculation_loaded(target)
        self._report_kv()

    @Slot()
    def _on_request_unload(self) -> None:
        self.session.unload()

    @Slot(str)
    def _on_request_unload_model(self, path: str) -> None:
        try:
            self.session.unload_model(path)
        except EngineError as e:  # ModelBusy: the chat's own model
            self.resident_refused.emit(str(e))

    @Slot(str, bool)
    def _on_request_pin_model(self, path: str, pinned: bool) -> None:
        self.session.pin_model(path, pinned)

    @Slot(object)
    def _on_request_model_limits(self, limits: tuple[int | None, int, float | None]) -> None:
        self.session.set_limits(*limits)

    def _on_session_residents(self, shown: object) -> None:  # engine thread, from the session
        self.residents_changed.emit(shown)
        self._arm_reaper()

    def _arm_reaper(self) -> None:
        """The timer set for the next idle model's time to live (stopped when none will run out)."""
        left = self._session.residents.next_expiry() if self._session is not None else None
        if left is None:
            self._reaper.stop()
        else:  # a little late rather than early: the model is then past its time, not just short of it
            self._reaper.start(min(int(left * 1000) + 50, REAPER_MAX_MS))

    @Slot()
    def _on_reaper_timeout(self) -> None:
        if self._session is not None:
            self._session.reap_idle()
            self._arm_reaper()

    @Slot(object)
    def _on_request_serve(self, options: ServeOptions) -> None:
        from prefill.session.chat_session import ServeRefused

        try:
            url = self.session.serve(options)
        except ServeRefused as e:
            self.serve_failed.emit(str(e))
            self._report_kv()
            return
        self.serving.emit(url)
        server = self.session.server
        if server is not None and server.options.speculation.mode != "off" and server.scheduler.speculation_note:
            note = server.scheduler.speculation_note.rstrip(".")  # a draft model refused, no flash attention…
            self.speculation_refused.emit(f"The server's slots decode one token per step: {note}.")
        self._report_kv()

    @Slot()
    def _on_request_stop_serving(self) -> None:
        self.session.stop_serving()
        self._report_kv()

    @Slot(object)
    def _on_request_resume(self, messages: list[Message]) -> None:
        self.session.show(messages)
        self._report_kv()

    @Slot(object)
    def _on_request_cache_budget(self, budget: int) -> None:
        self.session.set_cache_budget(budget)

    @Slot()
    def _on_request_clear_cache(self) -> None:
        self.session.clear_cache()

    @Slot(object)
    def _on_request_speculative(self, wanted: Speculation) -> None:
        from prefill.session.backends import apply_speculation, refusal_text

        engine = self.engine.speculates if self.engine is not None else None
        if engine is None:  # a remote, or the server's slot: the next load takes it
            return
        try:
            apply_speculation(engine, wanted, self._speculating)
        except EngineError as e:
            self._speculating = replace(wanted, mode="off")
            self.speculation_refused.emit(refusal_text(e))
            return
        self._speculating = wanted

    def _speculation_loaded(self, target: Target) -> None:
        """What a load set up (`open_backend` applied the target's speculation), and its refusal told."""
        from prefill.session.backends import LocalModel

        engine = self.engine.speculates if self.engine is not None else None
        if engine is None or not isinstance(target, LocalModel):
            self._speculating = None
            return
        self._speculating = target.speculation
        if engine.speculation_note:  # set by the load only when the draft model was refused
            self._speculating = replace(target.speculation, mode="off")
            self.speculation_refused.emit(engine.speculation_note)

    @Slot()
    def _on_request_shutdown(self) -> None:
        if self.documents is not None:
            self.documents.close()
        self.session.close()
        QThread.currentThread().quit()

    def _report_kv(self) -> None:
        if self.engine is not None:
            self.kv_state.emit(self.session.kv_snapshot())

    def _overflow_words(self, e: ContextOverflow, request: ChatRequest) -> str:
        """What to do about a prompt that does not fit: where the tools' schemas are what leaves no room
        (the prompt fits without them), turning them off, since no overflow policy shortens them."""
        said = (f"The conversation is {e.over:,} tokens too long for the {e.n_ctx:,}-token context "
                f"({e.prompt_tokens:,} in the prompt + {e.reserved:,} kept for the answer). ")
        if request.tools:
            try:
                bare = self.session.count_tokens(replace(request, tools=()))
            except (EngineError, ValueError):
                bare = None
            if bare is not None and bare + e.reserved <= e.n_ctx:
                return (said + f"The tools' schemas take {e.prompt_tokens - bare:,} of them: turn tools off "
                        "for this chat, or use fewer tools or a larger context.")
        return said + "Start a new chat, delete earlier messages, or pick another overflow policy."

    @Slot(int, object)
    def _on_request_generate(self, request_id: int, request: ChatRequest) -> None:
        if self.engine is None:
            self.failed.emit(request_id, "No model is loaded yet.")
            return
        put = self.buffer.put
        runner = self.tool_runner
        looping = bool(request.tools) and runner is not None
        try:
            if runner is not None and looping:
                def approve(call: ToolCall) -> Decision:
                    return self.gate.ask(call, lambda serial, c: self.tool_asked.emit(request_id, serial, c),
                                         self.cancel)

                events = run_tool_loop(self.session.stream, request, runner, approve, self.max_tool_rounds,
                                       self.cancel, self.approvals)
            else:
                events = self.session.stream(request, self.cancel)
            for ev in events:
                if type(ev) is Token:
                    put(ev.text, ev.reasoning)
                elif isinstance(ev, MetricsSnapshot):
                    self.metrics.emit(request_id, ev)
                elif isinstance(ev, PrefillDone):
                    self.prefill_done.emit(request_id, ev)
                elif isinstance(ev, Finished):
                    if not looping:  # in the loop, a round's end is not the turn's
                        self.finished.emit(request_id, ev)
                elif isinstance(ev, ToolCallStarted):
                    self.tool_started.emit(request_id, ev)
                elif isinstance(ev, ToolCallDone):
                    self.tool_done.emit(request_id, ev)
                elif isinstance(ev, LoopFinished):
                    self.tool_loop_finished.emit(request_id, ev)
                    self.finished.emit(request_id, ev.finished)
        except ContextOverflow as e:
            self.failed.emit(request_id, self._overflow_words(e, request))
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
        self._report_kv()

    @Slot(int, object, object)
    def _on_request_documents(self, request_id: int, conversation: Conversation,
                              asked: tuple[ChatDocs, int | None]) -> None:
        from prefill.session.document_chats import DocumentsUnavailable

        if self.engine is None:
            self.failed.emit(request_id, "No model is loaded yet.")
            return
        if self.documents is None:
            self.failed.emit(request_id, "Documents are not available in this window.")
            return
        try:
            docs, chat = asked
            turn, retrieved = self.documents.ask(docs, conversation, self.session.count_tokens, self.cancel, chat)
        except DocumentsUnavailable as e:
            self.failed.emit(request_id, str(e))
            return
        except (EngineError, ValueError) as e:  # counting the prompt's tokens
            self.failed.emit(request_id, f"The question could not be asked with the documents: {e}")
            return
        self.retrieved.emit(request_id, retrieved)
        self._on_request_generate(request_id, turn.request)

    @Slot(int, object, int)
    def _on_request_compact(self, request_id: int, request: ChatRequest, n_ctx: int) -> None:
        if self.engine is None:
            self.compaction_failed.emit(request_id, "No model is loaded yet.")
            return
        session = self.session
        work = summarise(session.stream, request, session.count_tokens, n_ctx, self.cancel)
        try:
            while True:
                next(work)  # the summary's tokens: not the answer's, so they go to no buffer
        except StopIteration as done:
            self.compacted.emit(request_id, done.value)
        except CompactionError as e:
            said = str(e)
            self.compaction_failed.emit(request_id, f"{said[:1].upper()}{said[1:]}.")
        except ContextOverflow as e:
            self.compaction_failed.emit(
                request_id, f"The conversation is {e.over} tokens too long for the {e.n_ctx}-token context even "
                            "to summarise it: delete earlier messages, or start a new chat.")
        except TemplateError as e:
            self.compaction_failed.emit(request_id, f"The model's chat template could not write the summary's "
                                                    f"prompt: {e}")
        except RemoteError as e:
            self.compaction_failed.emit(request_id, remote_error_text(e))
        except EngineError as e:
            self.compaction_failed.emit(request_id, f"The summary failed: {e}")
        self._report_kv()


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
        self.worker.shutdown()
        self.thread.wait()
