"""Conversations on the left: new, rename, delete, and search over titles and messages."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from prefill.store import Conversation, SearchHit
from prefill.ui.shared.plain_text import Button, ask, tooltip

ID_ROLE = Qt.ItemDataRole.UserRole + 1
TITLE_ROLE = Qt.ItemDataRole.UserRole + 2
MESSAGE_ROLE = Qt.ItemDataRole.UserRole + 3  # the message a search hit found, or -1


class ConversationList(QWidget):
    """Signals:
        selected(int): a conversation was picked.
        message_selected(int, int): a search hit in a message was picked: conversation, message.
        new_requested(): the New button.
        rename_requested(int, str): a new title for a conversation.
        delete_requested(int): after the user confirmed.
        search_changed(str): the search text, debounced (empty: show all).
    """

    selected = Signal(int)
    message_selected = Signal(int, int)
    new_requested = Signal()
    rename_requested = Signal(int, str)
    delete_requested = Signal(int)
    search_changed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search chats…")
        self.search.setClearButtonEnabled(True)
        self.list = QListWidget()
        self.list.setObjectName("conversation-list")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.new_button = QPushButton("New chat")
        self.rename_button = QPushButton("Rename")
        self.delete_button = QPushButton("Delete")
        buttons = QHBoxLayout()
        for b in (self.new_button, self.rename_button, self.delete_button):
            buttons.addWidget(b)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(self.search)
        lay.addWidget(self.list, 1)
        lay.addLayout(buttons)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(200)
        self._debounce.timeout.connect(lambda: self.search_changed.emit(self.search.text().strip()))
        self.search.textChanged.connect(lambda _t: self._debounce.start())
        self.list.currentItemChanged.connect(self._on_list_current_changed)
        self.new_button.clicked.connect(self.new_requested)
        self.rename_button.clicked.connect(self._on_rename_clicked)
        self.delete_button.clicked.connect(self._on_delete_clicked)
        self._quiet = False

    def current_id(self) -> int | None:
        item = self.list.currentItem()
        return int(item.data(ID_ROLE)) if item is not None else None

    def set_conversations(self, conversations: Sequence[Conversation], current: int | None) -> None:
        self._fill([(c.id, c.title, "", -1) for c in conversations], current)

    def set_search_results(self, hits: Sequence[SearchHit], titles: dict[int, str], current: int | None) -> None:
        rows: list[tuple[int, str, str, int]] = []
        seen: set[int] = set()
        for h in hits:
            if h.conversation_id in seen:
                continue
            seen.add(h.conversation_id)
            mid = -1 if h.message_id is None else h.message_id
            rows.append((h.conversation_id, titles.get(h.conversation_id, "Chat"), h.snippet, mid))
        self._fill(rows, current)

    def _fill(self, rows: Sequence[tuple[int, str, str, int]], current: int | None) -> None:
        self._quiet = True
        self.list.clear()
        for cid, title, snippet, mid in rows:
            item = QListWidgetItem(title if not snippet else f"{title}\n  {snippet}")
            item.setData(ID_ROLE, cid)
            item.setData(TITLE_ROLE, title)
            item.setData(MESSAGE_ROLE, mid)
            item.setToolTip(tooltip(title))
            self.list.addItem(item)
            if cid == current:
                self.list.setCurrentItem(item)
        self._quiet = False

    def _on_list_current_changed(self, item: QListWidgetItem | None, _prev: QListWidgetItem | None) -> None:
        if item is not None and not self._quiet:
            mid = int(item.data(MESSAGE_ROLE))
            if mid >= 0:
                self.message_selected.emit(int(item.data(ID_ROLE)), mid)
            else:
                self.selected.emit(int(item.data(ID_ROLE)))

    def _on_rename_clicked(self) -> None:
        cid, item = self.current_id(), self.list.currentItem()
        if cid is None or item is None:
            return
        title, ok = QInputDialog.getText(self, "Rename chat", "Title:", text=item.data(TITLE_ROLE))
        if ok and title.strip():
            self.rename_requested.emit(cid, title.strip())

    def _on_delete_clicked(self) -> None:
        cid = self.current_id()
        if cid is None:
            return
        if ask(self, "Delete chat", "Delete this chat and all its messages?", default=Button.Yes) == Button.Yes:
            self.delete_requested.emit(cid)
