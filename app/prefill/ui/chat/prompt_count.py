"""The context meter's figures: the next prompt's tokens, part by part, under the message box.

Asked 150 ms after typing stops, and again whenever what the model would read changes: an answer ends,
a row is deleted or comes back with Undo, a version is paged to, the chat is compacted, its documents,
tools or thinking switch change, an MCP server's tools come or go. The counting runs on the engine
thread, beside the worker that owns the model (a `Llama` is used by one thread): the chat as the
conversation service would ask it, with its system prompt, its tools' schemas and its documents read
as the turn would read them (session/prompt_parts.py), counted by the model's own tokenizer. Only the
newest question is counted; the GUI thread never waits. A remote model writes and counts its own
prompt, so for one the meter says so instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from prefill.engine.errors import EngineError
from prefill.engine.message import Message
from prefill.session.conversation import Conversation
from prefill.session.document_chats import ChatDocs, DocumentsUnavailable
from prefill.session.loaded import LoadedModel
from prefill.session.prompt_parts import DocumentsDraft, PromptParts, count_parts
from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.chat.controller import ChatController
from prefill.ui.chat.transcript.transcript_model import Roles, TranscriptModel
from prefill.ui.workers.engine_worker import EngineWorker

if TYPE_CHECKING:
    from prefill.ui.workers.mcp_servers import McpServers

DELAY_MS = 150  # after the last key, before the engine is asked
EMPTY_QUESTION = "…"  # counted in place of a message not typed yet


@dataclass(frozen=True)
class CountAsk:
    """One question for the counter: the chat as it would be asked, and what is typed."""

    tag: int
    conversation: Conversation
    text: str
    n_ctx: int
    documents: ChatDocs | None
    chat: int | None


class PartsCounter(QObject):
    """Counts the next prompt's parts on the engine thread (moved there, and owned by the worker).

    Signals:
        counted(int, object): the ask's tag and its PromptParts (None: the backend does not count).
        failed(int, str): the ask's tag, and why the chat's documents could not be counted, in words (after
            `counted`, which counted the prompt without them).
    """

    counted = Signal(int, object)
    failed = Signal(int, str)
    _asked = Signal(object)

    def __init__(self, worker: EngineWorker):
        super().__init__()
        self.worker = worker
        self.newest = 0  # written by the GUI thread; an older ask still queued is skipped
        self.moveToThread(worker.thread())
        self.setParent(worker)  # freed with the worker, on its thread
        self._asked.connect(self._on_asked)

    def ask(self, question: CountAsk) -> None:
        """Count `question` (GUI thread): only the newest one asked is counted."""
        self.newest = question.tag
        self._asked.emit(question)

    @Slot(object)
    def _on_asked(self, q: CountAsk) -> None:
        w = self.worker
        if q.tag != self.newest or w.engine is None:
            return  # a newer count was asked for meanwhile, or no model answers
        count = w.session.count_tokens
        question = Message("user", q.text or EMPTY_QUESTION)
        draft: DocumentsDraft | None = None
        problem = ""
        try:
            if q.documents is not None and w.documents is not None:
                draft = w.documents.draft(q.documents, q.conversation, q.text, count, q.chat)
        except DocumentsUnavailable as e:  # counted without them, and said
            problem = str(e)
        try:
            parts = count_parts(q.conversation, question, count, q.n_ctx, draft)
        except (EngineError, ValueError):
            return  # the template refused this chat: the turn will say so, in words
        self.counted.emit(q.tag, parts)
        if problem:
            self.failed.emit(q.tag, problem)


class PromptCount(QObject):
    """Keeps the meter under `box` true; `loaded()` is the model loaded now (None: none)."""

    def __init__(self, worker: EngineWorker, chat: ChatController, transcript: TranscriptModel, box: InputBox,
                 loaded: Callable[[], LoadedModel | None], parent: QObject | None = None):
        super().__init__(parent)
        self._chat, self._box, self._loaded = chat, box, loaded
        self.counter = PartsCounter(worker)
        self._tag = 0
        self.shown = 0  # the tag of the count the meter shows
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DELAY_MS)
        self._timer.timeout.connect(self.ask)
        self.counter.counted.connect(self._on_counter_counted)
        self.counter.failed.connect(self._on_counter_failed)
        box.text_changed.connect(lambda _t: self.later())
        chat.answer_finished.connect(lambda _f: self.later())
        chat.compaction.compacted.connect(lambda _s: self.later())
        chat.choices.documents_changed.connect(lambda _d: self.later())
        chat.choices.chat_tools_changed.connect(lambda _t: self.later())
        chat.choices.options_changed.connect(lambda _o: self.later())
        transcript.rowsRemoved.connect(lambda *_a: self.later())
        transcript.rowsInserted.connect(lambda *_a: None if chat.busy else self.later())
        transcript.dataChanged.connect(lambda _t, _b, roles: self.later() if Roles.VERSION in roles else None)

    def follow_tools(self, servers: McpServers | None) -> None:
        """Count again when the MCP servers' tools change (None: no tools are offered)."""
        if servers is not None:
            servers.changed.connect(self.later)

    @property
    def newest(self) -> int:
        """The tag of the newest count asked for (the counter's `counted` carries it)."""
        return self._tag

    def later(self) -> None:
        """Ask once things are quiet (each call restarts the wait)."""
        self._timer.start()

    def ask(self) -> None:
        """Ask the engine now for the parts of the prompt the chat would send."""
        loaded = self._loaded()
        if loaded is None:
            return
        if loaded.remote:  # the remote writes and counts its prompt: its usage says, after the answer
            self._box.meter.show_remote()
            return
        self._tag += 1
        c = self._chat
        self.counter.ask(CountAsk(self._tag, c.conversation(), self._box.editor.toPlainText().strip(), loaded.n_ctx,
                                  c.choices.documents, c.conversation_id))

    def _on_counter_counted(self, tag: int, parts: object) -> None:
        if tag == self._tag and self._loaded() is not None:
            self.shown = tag
            if isinstance(parts, PromptParts):
                self._box.meter.show_parts(parts)
            else:  # None: the backend writes and counts its own prompt
                self._box.meter.show_remote()

    def _on_counter_failed(self, tag: int, why: str) -> None:
        if tag == self._tag:
            self._box.meter.show_problem(why)
