"""Showing a chat: a stored one read from the history (a long one its end first), or a new one made.

Opened at its end, a long chat reads and shows its last TAIL_ROWS messages first, then the rest (one
more store call) in slices of PREPEND_SLICE rows, a slice per turn of the event loop; until then it is
not `complete`, and nothing is sent from it, so no prompt misses them.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from prefill.engine.message import Message
from prefill.store import ConversationRecord
from prefill.ui.chat.chat_choices import ChatChoices
from prefill.ui.chat.stored_rows import rows_of
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.workers.engine_worker import EngineWorker
from prefill.ui.workers.store_worker import StoreProxy

TAIL_ROWS = 40  # a long chat opens with this many of its last messages, then reads the rest
PREPEND_SLICE = 500  # the rest goes in this many rows a turn of the event loop


class ChatOpening(QObject):
    """Puts a chat in the transcript and tells the engine which chat is shown (its cache follows).

    Args:
        choices: The chat shown and its choices, set from the chat opened.
        messages: What the model reads of the chat shown now.

    Signals:
        opened(int): the transcript now shows this conversation.
        row_requested(int): show this transcript row (the message a search hit opened at).
        made(): a new chat joined the list.
    """

    opened = Signal(int)
    row_requested = Signal(int)
    made = Signal()

    def __init__(self, store: StoreProxy, worker: EngineWorker, model: TranscriptModel, choices: ChatChoices,
                 messages: Callable[[], list[Message]], parent: QObject | None = None):
        super().__init__(parent)
        self._store, self._worker, self._model, self._choices = store, worker, model, choices
        self._messages = messages
        self.complete = True  # every row of the chat shown is in the model
        self._serial = 0  # the latest open: a later one (even of this chat) supersedes an earlier one's remainder

    def open(self, cid: int, message_id: int = -1) -> None:
        """Show a stored conversation: at its end, or at `message_id` if that is one of its messages."""
        tail = None if message_id >= 0 else TAIL_ROWS
        self.complete = False
        self._serial += 1
        serial = self._serial

        def show(result: tuple[ConversationRecord, list[Row]]) -> None:
            conv, rows = result
            if conv.id != self._choices.conversation_id:
                self._worker.forget_approvals()  # "always allow" holds for the chat it was said in
            self._choices.opened(conv)
            self._model.set_rows(rows)
            if tail is None or len(rows) < tail:
                complete()
            else:
                first = rows[0].position
                self._store.read_messages(cid, before=first, then=lambda r: earlier(rows_of(r)[1]))
            self.opened.emit(conv.id)
            if message_id >= 0:
                found = [i for i, r in enumerate(rows) if r.message_id == message_id]
                if found:
                    self.row_requested.emit(found[0])

        def earlier(rows: list[Row]) -> None:
            # Put in a slice per turn of the event loop, nearest first: the view measures what it
            # gets, and thousands at once would stall the window as long as a whole open used to.
            if self._serial != serial:
                return
            if len(rows) > PREPEND_SLICE:
                self._model.prepend_rows(rows[-PREPEND_SLICE:])
                QTimer.singleShot(0, lambda: earlier(rows[:-PREPEND_SLICE]))
                return
            self._model.prepend_rows(rows)
            complete()

        def complete() -> None:
            self.complete = True
            # The engine saves the last chat's cache and restores this one's.
            self._worker.resume(self._messages())

        self._store.read_messages(cid, last=tail, then=lambda r: show(rows_of(r)))

    def new(self, then: Callable[[int], None] | None = None, error: Callable[[Exception], None] | None = None) -> None:
        """Make a new chat (the system prompt carries over) and show it; `then` gets its id."""
        fresh = self._choices.conversation_id is not None  # else the switches chosen before the first chat carry over

        def made(conv: ConversationRecord) -> None:
            self._worker.forget_approvals()
            self._serial += 1  # what an earlier open still had to read is not for this chat
            self.complete = True
            self._choices.made(conv, keep_tools=not fresh)
            self._model.set_rows([])
            self._worker.resume(self._messages())
            self.made.emit()
            self.opened.emit(conv.id)
            if then is not None:
                then(conv.id)

        self._store.create_conversation("New chat", self._choices.system_prompt, then=made, error=error)
