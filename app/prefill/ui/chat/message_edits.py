"""What can be done to a message of the chat shown, in the window and in the history: regenerate an
answer or edit a question (a new version: the turns after the one before are kept with it), page
through a message's versions (each comes back with the turns that followed it), branch a new chat from
it, retry a question, delete one (with Undo). None of them deletes a turn without an Undo."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import SignalInstance

from prefill.store import ConversationRecord, MessageRecord
from prefill.ui.chat.compaction_rows import ChatCompaction
from prefill.ui.chat.pending_delete import PendingDelete
from prefill.ui.chat.stored_rows import message_rows
from prefill.ui.chat.transcript.summary_rows import REMOVED, SUMMARY
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.workers.store_worker import StoredMessages, StoreProxy


class EditedChat(Protocol):
    """What the edits need of the chat they change (the window's ChatController)."""

    conversations_changed: SignalInstance  # () the chat list changed

    @property
    def busy(self) -> bool: ...

    @property
    def complete(self) -> bool: ...

    @property
    def writing(self) -> bool: ...

    def open_conversation(self, cid: int, message_id: int = -1) -> None: ...

    def generate(self, version_of: Row | None = None) -> None: ...


class MessageEdits:
    """The edits on the chat's messages: each asks nothing while the chat is busy or still being read,
    and one that moves or copies the stored messages waits until the last answer's writes are asked."""

    def __init__(self, chat: EditedChat, model: TranscriptModel, store: StoreProxy, pending: PendingDelete,
                 compaction: ChatCompaction):
        self._chat, self._model, self._store, self._pending = chat, model, store, pending
        self._compaction = compaction

    def _later(self, again: Callable[[], None]) -> bool:
        """Whether to do it `again` once the answer that just ended is written whole (else the turns it
        moves would keep that answer unfinished)."""
        if not self._chat.writing:
            return False
        self._store.after_pending(again)  # runs after the answer's own, which asks its writes
        return True

    def regenerate(self, row: int) -> None:
        """Answer again in place of the answer at `row`: it keeps its versions and gains one (‹ 2 / 2 ›);
        the turns after it leave the transcript and are kept with the version before, as an edit keeps
        them (paging back shows them again)."""
        if self._chat.busy or not self._chat.complete or row <= 0 or self._model.row(row).role != "assistant":
            return
        if self._later(lambda: self.regenerate(row)):
            return
        old = self._model.row(row)
        if old.message_id < 0:  # its row in the history is on its way: regenerate once it is there
            def again() -> None:
                if row < self._model.rowCount() and self._model.row(row).message_id >= 0:
                    self.regenerate(row)

            self._store.after_pending(again)
            return
        self._pending.commit()
        row = first_of_answer(self._model, row)  # the calls that answer made go with it
        self._model.remove_from(row)
        self._chat.generate(version_of=old)

    def page(self, row: int, step: int) -> None:
        """Show another version of the answer or edited question at `row` (-1 the one before, +1 the one
        after); it comes back with the turns that followed it, and the turns after the one shown now are
        kept with that one."""
        r = self._model.row(row) if 0 <= row < self._model.rowCount() else None
        if self._chat.busy or r is None or r.role not in ("assistant", "user") or r.message_id < 0:
            return
        to = r.version + step
        if not 0 <= to < r.versions or self._later(lambda: self.page(row, step)):
            return
        self._pending.commit()
        if r.role == "assistant":
            self._store.show_version(r.message_id, to, then=self.show_version)
            return

        def shown(record: MessageRecord) -> None:  # the turns after it changed: the chat is read again
            self._chat.open_conversation(record.conversation_id, record.id)

        self._store.show_version(r.message_id, to, then=shown)

    def show_version(self, record: MessageRecord) -> None:
        """Show the version of a stored answer that the history shows now (paged to, or shown again when a
        new one failed): in its row where no turn follows it, before or after (one row changes), else the
        chat read again at it (the turns after it are those of the version shown)."""
        at = self._row_of(record.id)
        if at < 0 or self._chat.busy:
            return
        if any(r.role != "notice" for r in self._model.rows()[at + 1 :]):
            self._chat.open_conversation(record.conversation_id, record.id)
            return

        def last(read: StoredMessages) -> None:  # turns follow it now when it is not the chat's last message
            if self._row_of(record.id) < 0:  # another chat was opened meanwhile
                return
            if read.messages and read.messages[-1].id == record.id:
                self.show_answer(record)
            else:
                self._chat.open_conversation(record.conversation_id, record.id)

        self._store.read_messages(record.conversation_id, last=1, then=last)

    def _row_of(self, message_id: int) -> int:
        return next((i for i, r in enumerate(self._model.rows()) if r.message_id == message_id), -1)

    def show_answer(self, record: MessageRecord) -> None:
        """Put a stored answer's shown version (and its tool rows) in place of the rows it has now."""
        at = self._row_of(record.id)
        if at < 0 or self._chat.busy:
            return
        first, new = first_of_answer(self._model, at), message_rows(record)
        if at == first and len(new) == 1:  # no tool rows before or after: one row changes
            a = new[0]
            self._model.update_row(at, content=a.content, reasoning=a.reasoning, figures=a.figures,
                                   finish_reason=a.finish_reason, version=a.version, versions=a.versions,
                                   sources=a.sources, streaming=False)
            return
        for _ in range(at - first + 1):
            self._model.remove_row(first)
        for i, r in enumerate(new):
            self._model.insert_row(first + i, r)

    def branch(self, row: int) -> None:
        """A new chat holding this one up to and including `row`, opened (same system prompt and settings)."""
        mid = self._model.row(row).message_id if 0 <= row < self._model.rowCount() else -1
        if self._chat.busy or not self._chat.complete or mid < 0 or self._later(lambda: self.branch(row)):
            return
        self._pending.commit()

        def made(conv: ConversationRecord) -> None:
            self._chat.conversations_changed.emit()
            self._chat.open_conversation(conv.id)

        self._store.branch_conversation(mid, then=made)

    def retry(self, row: int) -> None:
        """Ask again a question whose answer failed (the last row, a user message)."""
        rows = self._model.rows()
        if self._chat.busy or not self._chat.complete or rows[row].role != "user" or any(
            r.role not in ("notice", "tool") for r in rows[row + 1 :]
        ):
            return
        self._chat.generate()

    def edit(self, row: int, text: str) -> None:
        """Give a user message new words as a new version of it (‹ 2 / 2 ›): the words before and the
        turns after them are kept as its version before, and the answer is generated anew. A summary
        is edited in place."""
        if 0 <= row < self._model.rowCount() and self._model.row(row).role == SUMMARY:
            self._compaction.edit(row, text)
            return
        if self._chat.busy or not self._chat.complete or self._model.row(row).role != "user" or not text.strip():
            return
        if self._later(lambda: self.edit(row, text)):
            return
        r = self._model.row(row)
        if r.message_id < 0:  # its row in the history is on its way: edit once it is there
            def again() -> None:
                if row < self._model.rowCount() and self._model.row(row).message_id >= 0:
                    self.edit(row, text)

            self._store.after_pending(again)
            return
        self._pending.commit()
        self._model.remove_from(row + 1)
        self._model.update_row(row, content=text, version=r.versions, versions=r.versions + 1)
        self._store.edit_message(r.message_id, text)
        self._chat.generate()

    def delete(self, row: int) -> None:
        """Hide the message at `row` and offer Undo; the history lets it go when the offer ends."""
        if not self._chat.busy and 0 <= row < self._model.rowCount():
            self._pending.hide(row, REMOVED if self._model.row(row).role == SUMMARY else "Message deleted.")


def first_of_answer(model: TranscriptModel, row: int) -> int:
    """The first row of the answer at `row`: its tool calls come before it."""
    while row > 0 and model.row(row - 1).role == "tool":
        row -= 1
    return row
