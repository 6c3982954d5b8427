"""The next prompt's token count under the message box.

Asked of the engine 150 ms after typing stops, and again whenever what the model would read changes:
an answer ends, a row is deleted or comes back with Undo, a version is paged to, the chat is compacted.
A remote model writes and counts its own prompt, so for one the box says so instead.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from prefill.session.loaded import LoadedModel
from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.chat.controller import ChatController
from prefill.ui.chat.transcript.transcript_model import Roles, TranscriptModel
from prefill.ui.workers.engine_worker import EngineWorker

DELAY_MS = 150  # after the last key, before the engine is asked


class PromptCount(QObject):
    """Keeps the count under `box` true; `loaded()` is the model loaded now (None: none)."""

    def __init__(self, worker: EngineWorker, chat: ChatController, transcript: TranscriptModel, box: InputBox,
                 loaded: Callable[[], LoadedModel | None], parent: QObject | None = None):
        super().__init__(parent)
        self._worker, self._chat, self._box, self._loaded = worker, chat, box, loaded
        self._tag = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DELAY_MS)
        self._timer.timeout.connect(self.ask)
        worker.token_count.connect(self._on_worker_token_count)
        box.text_changed.connect(lambda _t: self.later())
        chat.answer_finished.connect(lambda _f: self.later())
        chat.compaction.compacted.connect(lambda _s: self.later())
        transcript.rowsRemoved.connect(lambda *_a: self.later())
        transcript.rowsInserted.connect(lambda *_a: None if chat.busy else self.later())
        transcript.dataChanged.connect(lambda _t, _b, roles: self.later() if Roles.VERSION in roles else None)

    def later(self) -> None:
        """Ask once things are quiet (each call restarts the wait)."""
        self._timer.start()

    def ask(self) -> None:
        """Ask the engine now for the count of the prompt the chat would send."""
        loaded = self._loaded()
        if loaded is None:
            return
        if loaded.remote:  # the remote writes and counts its prompt: its usage says, after the answer
            self._box.count.setText("prompt tokens: counted by the remote server")
            return
        self._tag += 1
        pending = self._box.editor.toPlainText().strip()
        self._worker.ask_count(self._tag, self._chat.messages(pending or "…"))

    def _on_worker_token_count(self, tag: int, n: int) -> None:
        loaded = self._loaded()
        if tag == self._tag and loaded is not None:
            self._box.set_count(n, loaded.n_ctx)
