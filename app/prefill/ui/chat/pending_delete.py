"""A deleted message, kept back for a few seconds so it can be undone.

The row leaves the transcript at once; the history keeps the message until the offer ends (its
timer runs out, or another action on the chat supersedes it), and only then is it deleted. So a
crash or a kill while Undo is offered loses nothing: the message is simply still there. (The
other way, deleting at once and writing it back on Undo, would lose it to a crash in between.)
On quit the offer ends as if it ran out: the delete is queued before the store thread stops.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Signal

from prefill.store.errors import MessageNotFound
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.workers.store_messages import store_error_text
from prefill.ui.workers.store_worker import StoreProxy

UNDO_MS = 8000


@dataclass
class _Held:
    at: int  # the row it had
    row: Row


class PendingDelete(QObject):
    """Hides a message now, deletes it from the history when Undo is no longer offered.

    Signals:
        offered(str): Undo is offered for this ("Message deleted.").
        closed(): it is no longer offered (undone, or deleted for good).
    """

    offered = Signal(str)
    closed = Signal()

    def __init__(self, model: TranscriptModel, store: StoreProxy, undo_ms: int = UNDO_MS):
        super().__init__()
        self.model, self.store = model, store
        self._held: _Held | None = None
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(undo_ms)
        self.timer.timeout.connect(self.commit)
        # A transcript filled anew (another chat opened, this one deleted) has no place to put it back in.
        model.modelReset.connect(self.commit)
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.commit)

    def hide(self, row: int, said: str = "Message deleted.") -> None:
        """Take `row` out of the transcript and offer Undo, saying `said`; one held before is deleted now."""
        self.commit()
        self._held = _Held(row, self.model.row(row))
        self.model.remove_row(row)
        self.timer.start()
        self.offered.emit(said)

    def holds(self, row: Row) -> bool:
        """Whether `row` is the message held while Undo is offered."""
        return self._held is not None and self._held.row is row

    def undo(self) -> None:
        """Put the message back where it was."""
        held, self._held = self._held, None
        self.timer.stop()
        if held is not None:
            self.model.insert_row(min(held.at, self.model.rowCount()), held.row)
            self.closed.emit()

    def commit(self) -> None:
        """Delete the held message from the history (if one is held) and end the offer."""
        held, self._held = self._held, None
        self.timer.stop()
        if held is None:
            return
        if held.row.message_id >= 0:
            self.store.delete_message(held.row.message_id, error=self._on_store_error)
        self.closed.emit()

    def _on_store_error(self, error: Exception) -> None:
        if not isinstance(error, MessageNotFound):  # gone already: its chat was deleted meanwhile
            self.store.error.emit(store_error_text(error))
