"""The collections dialog's parts: a collection as a card (its name, its size, the folder it watches, its
embedding model, and its actions as icons: add a folder, re-index, remove) and a collection's files as
rows (a file's name, what it gave or why it was not read, in the reader's words).

Names, paths and problems are outside text: labels are plain, tooltips escaped, rows painted as text.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QIcon, QPainter, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
)

from prefill.documents.index import FileRecord
from prefill.engine.units import format_bytes
from prefill.ui.documents.collection_words import file_line, file_parts, folders_words, model_words, plural
from prefill.ui.documents.marks import ElidedLabel, marked, repolish
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import tooltip
from prefill.ui.widgets.tokens import ICON, SPACE, TYPE
from prefill.ui.workers.documents_worker import CollectionEntry

PARTS_ROLE = Qt.ItemDataRole.UserRole + 1  # a file row's (name, what it gave or why not, read or not)
Index = QModelIndex | QPersistentModelIndex


def _action(name: str, tip: str, accessible: str) -> QToolButton:
    button = QToolButton()
    button.setObjectName("collection-action")
    button.setIcon(icon(name))
    button.setIconSize(QSize(ICON.inline, ICON.inline))
    button.setAutoRaise(True)
    button.setToolTip(tip)
    button.setAccessibleName(accessible)
    button.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # a click on a card's icon chooses nothing else
    return button


class CollectionCard(QFrame):
    """One collection in the list.

    Signals:
        add_requested(str): add a folder to this collection (its name).
        reindex_requested(str): look at its folders again and index what changed.
        remove_requested(str): remove it from the index (the dialog asks first).
    """

    add_requested = Signal(str)
    reindex_requested = Signal(str)
    remove_requested = Signal(str)

    def __init__(self, entry: CollectionEntry) -> None:
        super().__init__()
        self.setObjectName("collection-card")
        self.setAttribute(Qt.WidgetAttribute.WA_Hover)
        self.setProperty("chosen", False)
        c, roots = entry.summary, entry.roots
        self.name = c.name
        self.title = ElidedLabel(c.name)
        self.title.setObjectName("collection-card-name")
        self.add = _action("folder-plus", "Add a folder to this collection", f"Add a folder to {c.name}")
        self.reindex = _action("regenerate", "Re-index: read what changed in its folders (new and changed files; "
                               "files gone are dropped)", f"Re-index {c.name}")
        self.reindex.setEnabled(bool(roots))
        if not roots:
            self.reindex.setToolTip("Nothing to look at: no folders kept for it (add a folder to it)")
        self.remove = _action("delete", "Remove from the index… (its files stay where they are)", f"Remove {c.name}")
        self.facts = ElidedLabel(f"{plural(c.files, 'file')} · {plural(c.chunks, 'passage')} · "
                                 f"{format_bytes(c.bytes)}")
        self.facts.setObjectName("collection-card-facts")
        self.unread = ElidedLabel(f"{plural(c.failed, 'file')} not readable" if c.failed else "")
        self.unread.setObjectName("collection-card-line")
        self.unread.setToolTip("Choose the collection to see which, and why")
        self.folder = ElidedLabel(folders_words(roots))
        self.folder.setObjectName("collection-card-line")
        self.folder.setToolTip(tooltip("\n".join(roots) or "Made before Prefill kept its folders"))
        self.model = ElidedLabel(model_words(c.model_id))
        self.model.setObjectName("collection-card-line")
        self.model.setToolTip(tooltip(f"Embedding model: {c.model_id}" if c.model_id else ""))
        top = QHBoxLayout()
        top.setSpacing(0)
        top.addWidget(self.title, 1)
        for b in (self.add, self.reindex, self.remove):
            top.addWidget(b)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.sm, SPACE.sm, SPACE.md)
        lay.setSpacing(SPACE.xxs)
        lay.addLayout(top)
        lay.addWidget(self.facts)
        lay.addLayout(marked("folder", self.folder, ICON.inline - SPACE.xxs))
        lay.addLayout(marked("models", self.model, ICON.inline - SPACE.xxs))
        if c.failed:
            lay.addLayout(marked("warning", self.unread, ICON.inline - SPACE.xxs))
        self.add.clicked.connect(lambda: self.add_requested.emit(self.name))
        self.reindex.clicked.connect(lambda: self.reindex_requested.emit(self.name))
        self.remove.clicked.connect(lambda: self.remove_requested.emit(self.name))

    def words(self) -> str:
        """Everything it says, on one line (what a screen reader reads for its row)."""
        parts = (self.name, self.facts.full, self.folder.full, f"embedding model {self.model.full}", self.unread.full)
        return " · ".join(p for p in parts if p)

    def set_chosen(self, chosen: bool) -> None:
        if self.property("chosen") != chosen:
            self.setProperty("chosen", chosen)
            repolish(self)


def fill_files(files: QListWidget, records: tuple[FileRecord, ...]) -> None:
    """A collection's files as rows: each item's text is its whole line, its parts painted by `FileRows`."""
    files.clear()
    for f in records:
        name, what = file_parts(f)
        item = QListWidgetItem(file_line(f))
        item.setData(PARTS_ROLE, (name, what, f.state == "failed"))
        item.setToolTip(tooltip(f"{f.path}\n{f.problem}" if f.problem else f.path))
        item.setFlags(Qt.ItemFlag.ItemIsEnabled)
        files.addItem(item)


class FileRows(QStyledItemDelegate):
    """Paints a file's row: a document mark (a warning one when it was not read), its name, and at the end
    what it gave; a file not read has the reader's sentence under its name, wrapped, in full."""

    def __init__(self, view: QListWidget) -> None:
        super().__init__(view)
        self.view = view

    @staticmethod
    def _small(option: QStyleOptionViewItem) -> QFont:
        font = QFont(option.font)
        font.setPixelSize(TYPE.small)
        return font

    def _reason_rect(self, width: int) -> int:
        return max(1, width - 2 * SPACE.sm - ICON.inline - SPACE.sm)

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:  # noqa: N802 - Qt's name
        parts = index.data(PARTS_ROLE)
        line = max(QFontMetrics(option.font).height(), ICON.inline)
        height = 2 * SPACE.xs + line
        if isinstance(parts, tuple) and parts[2]:
            width = self._reason_rect(self.view.viewport().width())
            wrapped = QFontMetrics(self._small(option)).boundingRect(QRect(0, 0, width, 10_000),
                                                                     int(Qt.TextFlag.TextWordWrap), parts[1])
            height += wrapped.height()
        return QSize(SPACE.xxl * 6, height)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        parts = index.data(PARTS_ROLE)
        if not isinstance(parts, tuple):
            super().paint(painter, option, index)
            return
        name, what, failed = parts
        bare = QStyleOptionViewItem(option)
        self.initStyleOption(bare, index)
        bare.text, bare.icon = "", QIcon()
        style = option.widget.style() if option.widget is not None else self.view.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, bare, painter, option.widget)  # hover
        palette: QPalette = option.palette
        rect: QRect = option.rect.adjusted(SPACE.sm, SPACE.xs, -SPACE.sm, -SPACE.xs)
        body, small = QFont(option.font), self._small(option)
        line = max(QFontMetrics(body).height(), ICON.inline)
        painter.save()
        mark = QRect(rect.left(), rect.top() + (line - ICON.inline) // 2, ICON.inline, ICON.inline)
        icon("warning" if failed else "document").paint(painter, mark)
        x = mark.right() + SPACE.sm
        painter.setFont(small)
        small_m = QFontMetrics(small)
        right = rect.right()
        if not failed:  # what it gave, at the end of the line
            room = min(small_m.horizontalAdvance(what) + SPACE.xs, (rect.right() - x) // 2)  # (room to round)
            shown = small_m.elidedText(what, Qt.TextElideMode.ElideRight, room)
            painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
            painter.drawText(QRect(right - room, rect.top(), room, line),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, shown)
            right -= room + SPACE.md
        painter.setFont(body)
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        shown = QFontMetrics(body).elidedText(name, Qt.TextElideMode.ElideMiddle, max(0, right - x))
        painter.drawText(QRect(x, rect.top(), max(0, right - x), line), Qt.AlignmentFlag.AlignVCenter, shown)
        if failed:  # why, in full, under the name
            painter.setFont(small)
            painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
            below = QRect(x, rect.top() + line, max(1, rect.right() - x), rect.bottom() - rect.top() - line + 1)
            painter.drawText(below, int(Qt.TextFlag.TextWordWrap), what)
        painter.restore()
