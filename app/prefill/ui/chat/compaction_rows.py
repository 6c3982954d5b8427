"""Compaction in the window: the model's summary of the earlier turns, as a row of the chat.

With the "summarise" overflow policy, an answer that leaves the chat past the compaction threshold
of the loaded model's context (the conversation service's `due_after`) has the chat compacted at
once, before the person's next turn; the Compact action does it on demand. The engine worker has the
model write the summary (`EngineWorker.compact`, on the engine thread); meanwhile the window is busy
and the chat ends with a "Summarising the earlier turns…" row, which becomes the summary row (role
"summary").

The model reads the chat from its last summary on (`Conversation.model_messages`, the rows made a
conversation by row_messages.py: the system prompt with the summary under it, then the rows after
it); the rows before it stay, shown folded, and stored. In the history a summary is a "system"
message whose figures hold {"compaction": …} (no schema change; export and import keep it); removing
it (Delete, with Undo) has the model read the turns again, editing it changes what the next turn reads.
"""

from __future__ import annotations

import itertools
from typing import Any, Protocol

from PySide6.QtCore import QObject, Signal, SignalInstance

from prefill.engine.events import Finished
from prefill.session.compaction import Summary
from prefill.session.conversation import Compacted, Conversation
from prefill.store import MessageRecord
from prefill.ui.chat.answer_store import AnswerStore
from prefill.ui.chat.pending_delete import PendingDelete
from prefill.ui.chat.transcript.summary_rows import SUMMARY
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.workers.engine_worker import EngineWorker
from prefill.ui.workers.store_worker import StoreProxy


class CompactedChat(Protocol):
    """What a compaction needs of the chat it compacts (the window's ChatController)."""

    store: StoreProxy
    answers: AnswerStore  # where the summary is kept
    worker: EngineWorker
    model: TranscriptModel
    pending: PendingDelete
    notice: SignalInstance  # (str) a sentence for the person; "" clears it
    busy_changed: SignalInstance  # (bool)

    @property
    def busy(self) -> bool: ...

    @property
    def complete(self) -> bool: ...

    def conversation(self) -> Conversation: ...


class ChatCompaction(QObject):
    """Compacts the controller's chat: after an answer that left it past the threshold, or on demand.

    Signals:
        compacted(object): the Summary, once its row ends the chat.
        refused(str): no summary was made, and why, in words (also said as the chat's notice).
    """

    compacted = Signal(object)
    refused = Signal(str)

    def __init__(self, chat: CompactedChat, parent: QObject | None = None):
        super().__init__(parent)
        self.chat = chat
        self.n_ctx = 0  # the loaded model's context (0: not known, as for a remote: never due)
        self._ids = itertools.count(1)
        self._request = 0  # the compaction in progress (0: none)
        self._row: Row | None = None  # its "Summarising…" row
        chat.worker.loaded.connect(self._on_worker_loaded)
        chat.worker.compacted.connect(self._on_worker_compacted)
        chat.worker.compaction_failed.connect(self._on_worker_compaction_failed)

    @property
    def running(self) -> bool:
        return self._request != 0

    def after_answer(self, f: Finished) -> None:
        """Compact now if the "summarise" policy is on and this answer left the chat past the threshold
        (an answer stopped or cut short by an error leaves it for the next one)."""
        if not f.error and f.reason != "cancelled" and self.chat.conversation().due_after(f):
            self.compact()

    def compact(self) -> None:
        """Have the model summarise the chat as it reads it now; its summary becomes the last row."""
        c = self.chat
        if c.busy or self.running:
            return
        if not c.complete:  # the chat's earlier messages are still being read: after them
            c.store.after_pending(self.compact)
            return
        c.pending.commit()
        request = c.conversation().compaction_request()  # the chat as the model reads it now
        self._request = next(self._ids)  # busy from here on
        c.busy_changed.emit(True)
        c.notice.emit("")
        self._row = Row(SUMMARY, [], streaming=True)
        c.model.append_row(self._row)
        c.worker.compact(self._request, request, self.n_ctx)

    def edit(self, row: int, text: str) -> None:
        """Put `text` in place of the summary at `row`: the next turn reads it (kept at once)."""
        c = self.chat
        r = c.model.row(row)
        if c.busy or r.role != SUMMARY or not text.strip() or text == r.content:
            return
        c.model.update_row(row, content=text)

        def keep() -> None:  # the row's text as it is then (a later edit wins)
            mid = r.message_id
            if mid >= 0:
                c.store.update_answer(mid, r.content)

        if r.message_id >= 0:
            keep()
        else:  # the store has not kept the summary yet: its calls run in order, so after this one it has
            c.store.after_pending(keep)
        c.notice.emit("Summary edited: the next turn reads your words.")

    def _on_worker_loaded(self, info: Any) -> None:
        self.n_ctx = int(getattr(info, "n_ctx", 0) or 0)

    def _on_worker_compacted(self, request: int, summary: Summary) -> None:
        if request != self._request:
            return
        c, row = self.chat, self._take_row()
        if row is not None:
            at = self._index(row)
            c.model.update_row(at, content=summary.text, figures=summary.as_dict(), streaming=False)
            c.answers.summary_made(Compacted(summary.text, summary), then=lambda m: self._stored(row, m))
        self._end()
        c.notice.emit(f"{summary.note}.")
        self.compacted.emit(summary)

    def _on_worker_compaction_failed(self, request: int, text: str) -> None:
        if request != self._request:
            return
        row = self._take_row()
        if row is not None:
            self.chat.model.remove_row(self._index(row))
        self._end()
        self.chat.notice.emit(text)
        self.refused.emit(text)

    def _take_row(self) -> Row | None:
        row, self._row = self._row, None
        return row if row is not None and self._index(row) >= 0 else None

    def _index(self, row: Row) -> int:
        return next((i for i, r in enumerate(self.chat.model.rows()) if r is row), -1)

    def _stored(self, row: Row, m: MessageRecord) -> None:
        at = self._index(row)
        row.position = m.position
        if at >= 0:
            self.chat.model.update_row(at, message_id=m.id)
        elif self.chat.pending.holds(row):  # removed, Undo offered: the offer's end deletes it, Undo keeps it
            row.message_id = m.id
        else:  # removed for good before the store kept it
            self.chat.store.delete_message(m.id)

    def _end(self) -> None:
        self._request = 0
        self.chat.busy_changed.emit(False)
