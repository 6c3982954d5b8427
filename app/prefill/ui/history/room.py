"""The history room wires itself: the chat list (open, new, rename, delete, search, export) and the
History menu's notices, against the store and the chat open now, reached through `OpenChat`, so this
room imports nothing of the chat room.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QObject

from prefill.store import ConversationRecord
from prefill.ui.history.conversation_list import ConversationList
from prefill.ui.history.menu import HistoryMenu
from prefill.ui.wiring.room_actions import RoomActions
from prefill.ui.workers.store_worker import StoreProxy


class OpenChat(Protocol):
    """What the history room asks of the chat shown in the window."""

    @property
    def conversation_id(self) -> int | None: ...

    @property
    def busy(self) -> bool: ...

    def open_conversation(self, cid: int) -> None: ...

    def new_conversation(self) -> None: ...


class HistoryRoom(QObject):
    """The chat list kept true against the store.

    Args:
        chats: The chat list's widget.
        menu: The History menu (export and import).
        store: The store thread.
        chat: The chat shown now.
        close_chat: Empties the chat shown (its conversation was deleted).
        export: Asks where to export one chat, then does (`menu.export_to`).
        notice: Says a sentence under the chat.
    """

    def __init__(self, chats: ConversationList, menu: HistoryMenu, store: StoreProxy, chat: OpenChat,
                 close_chat: Callable[[], None], export: Callable[[int], None], notice: Callable[[str], None],
                 parent: QObject | None = None):
        super().__init__(parent)
        self.chats, self._store, self._chat, self._close_chat = chats, store, chat, close_chat
        self.titles: dict[int, str] = {}  # every conversation's title by id, as last listed
        chats.selected.connect(chat.open_conversation)
        chats.message_selected.connect(chat.open_conversation)
        chats.new_requested.connect(lambda: chat.new_conversation())
        chats.rename_requested.connect(lambda cid, t: store.rename_conversation(cid, t, then=lambda _r: self.refresh()))
        chats.delete_requested.connect(self.delete)
        chats.search_changed.connect(self._on_chats_search_changed)
        chats.export_requested.connect(export)
        menu.notice.connect(notice)
        menu.imported.connect(self.refresh)

    def offer_actions(self, actions: RoomActions) -> None:
        def search() -> None:
            self.chats.search.setFocus()
            self.chats.search.selectAll()

        actions.offer("search", search)

    def refresh(self) -> None:
        """List the conversations again (unless a search is showing its hits)."""
        def fill(convs: list[ConversationRecord]) -> None:
            self.titles = {c.id: c.title for c in convs}
            if not self.chats.search.text().strip():
                self.chats.set_conversations(convs, self._chat.conversation_id)

        self._store.list_conversations(then=fill)

    def delete(self, cid: int) -> None:
        """Delete a conversation (not the one open while it answers)."""
        if cid == self._chat.conversation_id:
            if self._chat.busy:
                return
            self._close_chat()
        self._store.delete_conversation(cid, then=lambda _r: self.refresh())

    def _on_chats_search_changed(self, query: str) -> None:
        if not query:
            self.refresh()
            return
        self._store.search(query, then=lambda hits: self.chats.set_search_results(
            hits, self.titles, self._chat.conversation_id))
