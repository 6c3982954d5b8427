"""Conversations on the left: new, rename, delete, and search over titles and messages.

The chats are grouped by the day they last changed (Today, Yesterday, Previous 7 days, Older). A
group's name is painted above its first chat by the list's delegate rather than being an item of its
own, so every item is a chat: its row, the keyboard's Up and Down and the current item stay chats.

Search results show the words found on a marker's colour. The delegate paints the title and the
excerpt as plain text, piece by piece: a title is text from outside (STYLE.md 16), never markup.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import date, datetime

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPoint, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from prefill.store import ConversationRecord, SearchHit
from prefill.store.search import search_terms
from prefill.ui.widgets.colours import colours_for
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import Button, ask, plain_label, tooltip
from prefill.ui.widgets.text_sheet import TextSheet
from prefill.ui.widgets.tokens import ICON, SPACE

ID_ROLE = Qt.ItemDataRole.UserRole + 1
TITLE_ROLE = Qt.ItemDataRole.UserRole + 2
MESSAGE_ROLE = Qt.ItemDataRole.UserRole + 3  # the message a search hit found, or -1
GROUP_ROLE = Qt.ItemDataRole.UserRole + 4  # the date group's name, on the first chat of each group ("" on the rest)
HEADER_PAD = 6  # above a group's name
GROUP_OF_ROLE = Qt.ItemDataRole.UserRole + 5  # the date group of every chat (search results: none)


def date_group(updated_at: float, today: date) -> str:
    """The group a chat last changed at `updated_at` (seconds since the epoch) falls in, seen on `today`."""
    days = (today - datetime.fromtimestamp(updated_at).date()).days
    if days <= 0:
        return "Today"
    if days == 1:
        return "Yesterday"
    if days <= 7:
        return "Previous 7 days"
    return "Older"


def match_spans(text: str, terms: list[str]) -> list[tuple[int, int]]:
    """Where any of `terms` occurs in `text`, any case: (start, end) pairs, in order, overlaps merged."""
    low = text.lower()
    if len(low) != len(text):  # a letter whose lower case is longer: no place to mark safely
        return []
    spans: list[tuple[int, int]] = []
    for term in {t.lower() for t in terms if t}:
        at = low.find(term)
        while at >= 0:
            spans.append((at, at + len(term)))
            at = low.find(term, at + 1)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def pieces(text: str, terms: list[str]) -> list[tuple[str, bool]]:
    """`text` cut into pieces, each marked whether it is a match of `terms`."""
    out: list[tuple[str, bool]] = []
    at = 0
    for start, end in match_spans(text, terms):
        if start > at:
            out.append((text[at:start], False))
        out.append((text[start:end], True))
        at = end
    if at < len(text):
        out.append((text[at:], False))
    return out


class GroupDelegate(QStyledItemDelegate):
    """Paints a group's name above the first chat of the group (its GROUP_ROLE), muted and small; with
    search `terms`, the words found on the marker's colour."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.terms: list[str] = []  # the search's words (none: the plain list)

    def _header_height(self, option: QStyleOptionViewItem) -> int:
        return option.fontMetrics.height() + HEADER_PAD

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        if index.data(GROUP_ROLE):
            size.setHeight(size.height() + self._header_height(option))
        return size

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        group = index.data(GROUP_ROLE)
        if not group:
            self._paint_item(painter, option, index)
            return
        header = self._header_height(option)
        rect = QRect(option.rect)
        painter.save()
        font = painter.font()
        font.setBold(True)
        painter.setFont(font)
        painter.setPen(option.palette.placeholderText().color())
        painter.drawText(rect.adjusted(4, HEADER_PAD, -4, 0).topLeft() + QPoint(0, option.fontMetrics.ascent()),
                         str(group))
        painter.restore()
        item = QStyleOptionViewItem(option)
        item.rect = rect.adjusted(0, header, 0, 0)
        self._paint_item(painter, item, index)

    def _paint_item(self, painter: QPainter, option: QStyleOptionViewItem,
                    index: QModelIndex | QPersistentModelIndex) -> None:
        if not self.terms:
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text
        opt.text = ""  # the row, its selection and focus drawn by the style; the words by hand, below
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        area = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget).adjusted(2, 0, -2, 0)
        self.paint_matches(painter, area, text, opt)

    def paint_matches(self, painter: QPainter, area: QRect, text: str, opt: QStyleOptionViewItem) -> None:
        """`text`'s lines in `area` as plain text, each elided to fit, the matches on the marker's colour."""
        fm = opt.fontMetrics
        lines = text.split("\n")
        top = area.top() + (area.height() - fm.height() * len(lines)) // 2
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        active = bool(opt.state & QStyle.StateFlag.State_Active)
        group = QPalette.ColorGroup.Active if active else QPalette.ColorGroup.Inactive
        plain = opt.palette.color(group, QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        dark = opt.palette.color(QPalette.ColorRole.Base).lightness() < 128
        marker = QColor(colours_for("dark" if dark else "light").search_match)
        words = opt.palette.color(QPalette.ColorRole.Text)  # on the marker, the text's own colour reads
        painter.save()
        for n, line in enumerate(lines):
            shown = fm.elidedText(line, Qt.TextElideMode.ElideRight, area.width())
            x, y = area.left(), top + n * fm.height()
            for piece, hit in pieces(shown, self.terms):
                width = fm.horizontalAdvance(piece)
                if hit:
                    painter.fillRect(QRect(x, y, width, fm.height()), marker)
                painter.setPen(words if hit else plain)
                painter.drawText(QPoint(x, y + fm.ascent()), piece)  # drawText with a string: plain text
                x += width
        painter.restore()


def _icon_button(name: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setIcon(icon(name))
    button.setIconSize(QSize(ICON.toolbar, ICON.toolbar))
    button.setToolTip(tip)
    return button


class ConversationList(QWidget):
    """Signals:
        selected(int): a conversation was picked.
        message_selected(int, int): a search hit in a message was picked: conversation, message.
        new_requested(): the New button.
        rename_requested(int, str): a new title for a conversation.
        delete_requested(int): after the user confirmed.
        search_changed(str): the search text, debounced (empty: show all).
        export_requested(int): Export from a chat's context menu.
    """

    selected = Signal(int)
    message_selected = Signal(int, int)
    new_requested = Signal()
    rename_requested = Signal(int, str)
    delete_requested = Signal(int)
    search_changed = Signal(str)
    export_requested = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search chats…")
        self.search.setClearButtonEnabled(True)
        self.list = QListWidget()
        self.list.setObjectName("conversation-list")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.delegate = GroupDelegate(self.list)
        self.list.setItemDelegate(self.delegate)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._on_list_context_menu)
        # Said in place of an empty list: a search that found nothing, or no chats yet.
        self.empty = plain_label()
        self.empty.setObjectName("conversations-empty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.hide()
        self.menu: QMenu | None = None  # the last context menu (tests trigger its actions)
        self.new_button = QPushButton(icon("new-chat"), "New chat")
        self.new_button.setObjectName("new-chat")
        # Rename and Delete as icons (their words on hover, and in the chat's right-click menu), so the list
        # stays narrow enough for the chat column at 900 px.
        self.rename_button = _icon_button("edit", "Rename the chat (also on a right click)")
        self.delete_button = _icon_button("delete", "Delete the chat (also on a right click)")
        buttons = QHBoxLayout()
        buttons.setSpacing(SPACE.xs)
        buttons.addWidget(self.new_button)
        buttons.addStretch(1)
        buttons.addWidget(self.rename_button)
        buttons.addWidget(self.delete_button)
        for part, name in ((self.search, "Search chats"), (self.list, "Chats"), (self.new_button, "New chat"),
                           (self.rename_button, "Rename the chat"), (self.delete_button, "Delete the chat")):
            part.setAccessibleName(name)  # a screen reader's words where the part's own do not say it
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.sm, SPACE.sm, SPACE.sm, SPACE.sm)
        lay.addWidget(self.search)
        lay.addWidget(self.list, 1)
        lay.addWidget(self.empty, 1)
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
        self.today = date.today  # what "today" is (tests fix it)
        self.rename_sheet: TextSheet | None = None  # the last Rename sheet opened (kept until the next)

    def current_id(self) -> int | None:
        item = self.list.currentItem()
        return int(item.data(ID_ROLE)) if item is not None else None

    def set_conversations(self, conversations: Sequence[ConversationRecord], current: int | None) -> None:
        today = self.today()
        groups = [date_group(c.updated_at or c.created_at or time.time(), today) for c in conversations]
        self.delegate.terms = []
        self._fill([(c.id, c.title, "", -1) for c in conversations], current, groups)
        self._say_empty("No chats yet. Write a message to start one, or press New chat." if not conversations else "")

    def set_search_results(self, hits: Sequence[SearchHit], titles: dict[int, str], current: int | None) -> None:
        rows: list[tuple[int, str, str, int]] = []
        seen: set[int] = set()
        for h in hits:
            if h.conversation_id in seen:
                continue
            seen.add(h.conversation_id)
            mid = -1 if h.message_id is None else h.message_id
            rows.append((h.conversation_id, titles.get(h.conversation_id, "Chat"), h.snippet, mid))
        query = self.search.text().strip()
        self.delegate.terms = search_terms(query)
        self._fill(rows, current)
        self._say_empty(f"No chats match “{query}”. Try other words, or clear the search." if not rows else "")

    def matches(self, row: int) -> list[str]:
        """The words marked in the chat at `row` (in its whole text, before it is cut to fit; none outside a
        search)."""
        text = str(self.list.item(row).text())
        return [piece for line in text.split("\n") for piece, hit in pieces(line, self.delegate.terms) if hit]

    def group_of(self, row: int) -> str:
        """The date group the chat at `row` is in ("" for search results, which are not grouped)."""
        return str(self.list.item(row).data(GROUP_OF_ROLE) or "")

    def _say_empty(self, text: str) -> None:
        self.empty.setText(text)
        self.empty.setVisible(bool(text))
        self.list.setVisible(not text)

    def _fill(self, rows: Sequence[tuple[int, str, str, int]], current: int | None,
              groups: Sequence[str] = ()) -> None:
        self._quiet = True
        self.list.clear()
        for i, (cid, title, snippet, mid) in enumerate(rows):
            item = QListWidgetItem(title if not snippet else f"{title}\n  {snippet}")
            item.setData(ID_ROLE, cid)
            item.setData(TITLE_ROLE, title)
            item.setData(MESSAGE_ROLE, mid)
            if groups:
                first = i == 0 or groups[i - 1] != groups[i]
                item.setData(GROUP_ROLE, groups[i] if first else "")
                item.setData(GROUP_OF_ROLE, groups[i])
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

    def _on_list_context_menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        self.list.setCurrentItem(item)  # the menu's actions work on the chat it was opened on
        self.menu = self.context_menu()
        self.menu.popup(self.list.viewport().mapToGlobal(pos))

    def context_menu(self) -> QMenu:
        """Rename, Export and Delete for the current chat."""
        menu = QMenu(self)
        menu.setObjectName("conversation-menu")
        menu.addAction("Rename…", self._on_rename_clicked)
        export = menu.addAction("Export…", self._on_export_triggered)
        export.setToolTip("Save this chat to a file")
        menu.addSeparator()
        menu.addAction("Delete…", self._on_delete_clicked)
        return menu

    def _on_export_triggered(self) -> None:
        cid = self.current_id()
        if cid is not None:
            self.export_requested.emit(cid)

    def _on_rename_clicked(self) -> None:
        cid, item = self.current_id(), self.list.currentItem()
        if cid is None or item is None:
            return
        if self.rename_sheet is not None:
            self.rename_sheet.deleteLater()  # the one before, done with
        self.rename_sheet = TextSheet(self, "Rename chat", "The name this chat has in the list.",
                                      str(item.data(TITLE_ROLE)), save_text="Rename")
        self.rename_sheet.saved.connect(lambda title, cid=cid: self.rename_requested.emit(cid, title))
        self.rename_sheet.open()

    def _on_delete_clicked(self) -> None:
        cid = self.current_id()
        if cid is None:
            return
        if ask(self, "Delete chat", "Delete this chat and all its messages?", default=Button.Yes) == Button.Yes:
            self.delete_requested.emit(cid)
