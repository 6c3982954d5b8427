"""The collections: named sets of documents that several chats read, as LocalDocs keeps them.

The collections as cards on the left, each with its size (files, passages, bytes), the folder it watches
(a change in it is indexed while Prefill runs) and its embedding model, and its actions as icons: add a
folder, re-index, remove from the index (asked first; the files stay where they are). On the right the one
chosen: the same facts in full, its files, each with what it gave or, not read, the reason in words, and
Read in this chat. With none yet, the dialog says what to do: add a folder. Everything shown comes from the
documents worker's signals; names, paths and problems are outside text, shown plain.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from prefill.session.document_chats import OWN_PREFIX
from prefill.ui.documents.collection_cards import CollectionCard, FileRows, fill_files
from prefill.ui.documents.collection_words import (
    check_name,
    free_name,
    model_line,
    plural,
    size_line,
    watched_line,
)
from prefill.ui.documents.marks import IconMark, marked
from prefill.ui.widgets.plain_text import Button, ask, plain_label, tooltip
from prefill.ui.widgets.text_sheet import TextSheet, primary
from prefill.ui.widgets.tokens import COLUMN, ICON, SPACE
from prefill.ui.workers.documents_worker import CollectionEntry, CollectionView, DocumentsWorker

EMPTY_TITLE = "No collections yet — add a folder"
EMPTY_HINT = ("A collection is a folder of documents that any chat can read. Prefill indexes it here, on this "
              "machine, and watches it for changes while it runs.")
CARDS_WIDTH = COLUMN.side_min_width + 3 * SPACE.xxl  # the list of cards; the chosen one's files take the rest
CARD_WIDTH = CARDS_WIDTH - 2 * SPACE.xs - SPACE.md  # inside the list's spacing, room kept for its scroll bar


class CollectionsDialog(QDialog):
    """Signals:
        use_requested(str): read this collection in the open chat.
        index_requested(str, str): index this folder into this collection (a new one, or more for it).
        reindex_requested(str): look at this collection's folders again and index what changed.
        notice(str): something to say in the window (a refused name).
    """

    use_requested = Signal(str)
    index_requested = Signal(str, str)
    reindex_requested = Signal(str)
    notice = Signal(str)

    def __init__(self, worker: DocumentsWorker, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("collections-dialog")
        self.setWindowTitle("Document collections")
        self.worker = worker
        self.entries: list[CollectionEntry] = []
        self.cards: dict[str, CollectionCard] = {}
        self.view: CollectionView | None = None
        self.name_sheet: TextSheet | None = None  # the last New collection sheet (kept until the next)
        heading = plain_label("Collections")
        heading.setObjectName("collections-title")
        self.new = QPushButton("New collection…")
        self.new.setObjectName("collection-new")
        self.new.setToolTip("Make a collection from a folder")
        head = QHBoxLayout()
        head.addWidget(heading, 1)
        head.addWidget(self.new)
        self.stack = QStackedWidget()
        self.empty = self._empty_page()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(self._main_page())
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.xl, SPACE.lg, SPACE.xl, SPACE.xl)
        lay.setSpacing(SPACE.md)
        lay.addLayout(head)
        lay.addWidget(self.stack, 1)
        self.new.clicked.connect(self._on_new_clicked)
        worker.collections.connect(self._on_worker_collections)
        worker.collection.connect(self._on_worker_collection)
        self._show(None)
        self.setMinimumSize(COLUMN.min_width + COLUMN.side_min_width, COLUMN.min_width)
        self.resize(COLUMN.width + 2 * SPACE.xxl, COLUMN.min_width + 2 * SPACE.xxl)

    def _empty_page(self) -> QWidget:
        page = QWidget()
        page.setObjectName("collections-empty")
        title = plain_label(EMPTY_TITLE)
        title.setObjectName("collections-empty-title")
        hint = plain_label(EMPTY_HINT)
        hint.setObjectName("collections-empty-hint")
        hint.setWordWrap(True)
        hint.setFixedWidth(COLUMN.min_width)
        self.empty_add = primary(QPushButton("Add a folder…"))
        self.empty_add.setObjectName("collections-empty-add")
        self.empty_add.clicked.connect(self._on_new_clicked)
        hint.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        col = QVBoxLayout(page)
        col.setSpacing(SPACE.sm)
        col.addStretch(1)
        for w, after in ((IconMark("folder", 2 * ICON.toolbar), SPACE.xs), (title, 0), (hint, SPACE.md),
                         (self.empty_add, 0)):
            centred = QHBoxLayout()  # (a wrapped label aligned in a column loses the height its lines need)
            centred.addStretch(1)
            centred.addWidget(w)
            centred.addStretch(1)
            col.addLayout(centred)
            col.addSpacing(after)
        col.addStretch(2)
        return page

    def _main_page(self) -> QWidget:
        self.list = QListWidget()
        self.list.setObjectName("collections-list")
        self.list.setAccessibleName("Collections")
        self.list.setFixedWidth(CARDS_WIDTH)
        self.list.setSpacing(SPACE.xs)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.currentRowChanged.connect(self._on_list_current)
        self.title = plain_label("")
        self.title.setObjectName("collection-name")
        self.title.setWordWrap(True)
        self.size_label = plain_label("")
        self.size_label.setObjectName("collection-size")
        self.size_label.setWordWrap(True)
        self.model = plain_label("")
        self.model.setObjectName("collection-model")
        self.model.setWordWrap(True)
        self.watched = plain_label("")
        self.watched.setObjectName("collection-watched")
        self.watched.setWordWrap(True)
        files_caption = plain_label("Files")
        files_caption.setObjectName("collection-files-caption")
        self.files = QListWidget()
        self.files.setObjectName("collection-files")
        self.files.setAccessibleName("Its files")
        self.files.setItemDelegate(FileRows(self.files))
        self.files.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.files.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.files.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.files.setResizeMode(QListView.ResizeMode.Adjust)  # rows wrap again at a new width
        self.files.setMouseTracking(True)
        self.use = primary(QPushButton("Read in this chat"))
        self.use.setObjectName("collection-use")
        self.use.setToolTip("The open chat reads this collection (in place of documents of its own)")
        self.use.clicked.connect(lambda: self.use_requested.emit(self.current))
        detail = QFrame()
        detail.setObjectName("collection-detail")
        d = QVBoxLayout(detail)
        d.setContentsMargins(SPACE.lg, SPACE.md, SPACE.lg, SPACE.md)
        d.setSpacing(SPACE.xs)
        d.addWidget(self.title)
        d.addWidget(self.size_label)
        d.addLayout(marked("models", self.model))
        d.addLayout(marked("folder", self.watched))
        d.addSpacing(SPACE.sm)
        d.addWidget(files_caption)
        d.addWidget(self.files, 1)
        foot = QHBoxLayout()
        foot.addStretch(1)
        foot.addWidget(self.use)
        d.addLayout(foot)
        page = QWidget()
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(SPACE.md)
        row.addWidget(self.list)
        row.addWidget(detail, 1)
        return page

    @property
    def names(self) -> list[str]:
        return [e.summary.name for e in self.entries]

    @property
    def current(self) -> str:
        row = self.list.currentRow()
        return self.entries[row].summary.name if 0 <= row < len(self.entries) else ""

    def card(self, name: str) -> CollectionCard | None:
        """The card of collection `name` (None: not listed)."""
        return self.cards.get(name)

    def refresh(self) -> None:
        """Ask for the collections again (after a job, a removal)."""
        self.worker.list_collections()

    def _on_worker_collections(self, found: list[CollectionEntry]) -> None:
        keep = self.current
        self.entries = [e for e in found if not e.summary.name.startswith(OWN_PREFIX)]
        self.list.blockSignals(True)
        self.list.clear()
        self.cards = {}
        for entry in self.entries:
            card = CollectionCard(entry)
            card.add_requested.connect(self.add_folder)
            card.reindex_requested.connect(self.reindex_requested)
            card.remove_requested.connect(self.remove)
            item = QListWidgetItem()
            item.setData(Qt.ItemDataRole.AccessibleTextRole, card.words())
            item.setSizeHint(QSize(CARD_WIDTH, card.sizeHint().height()))  # as wide as the list, not its words
            self.list.addItem(item)
            self.list.setItemWidget(item, card)
            self.cards[entry.summary.name] = card
        self.list.blockSignals(False)
        names = self.names
        at = names.index(keep) if keep in names else 0 if names else -1
        self.stack.setCurrentIndex(1 if names else 0)
        self.new.setVisible(bool(names))  # with none, the empty page's own button says it
        self.list.blockSignals(True)
        self.list.setCurrentRow(at)
        self.list.blockSignals(False)
        self._on_list_current(at)

    def _on_list_current(self, row: int) -> None:
        for i, entry in enumerate(self.entries):
            self.cards[entry.summary.name].set_chosen(i == row)
        if 0 <= row < len(self.entries):
            self.worker.read_collection(self.entries[row].summary.name)
        else:
            self._show(None)

    def _on_worker_collection(self, name: str, view: CollectionView | None) -> None:
        if name == self.current:
            self._show(view)

    def _show(self, view: CollectionView | None) -> None:
        self.view = view
        self.use.setEnabled(view is not None)
        self.files.clear()
        if view is None:
            self.title.setText("No collection chosen" if self.entries else EMPTY_TITLE)
            for label in (self.size_label, self.model, self.watched):
                label.setText("")
            return
        c = view.summary
        self.title.setText(c.name)
        self.size_label.setText(size_line(c))
        self.model.setText(model_line(c))
        self.model.setToolTip(tooltip(c.model_id))
        self.watched.setText(watched_line(view.roots))
        self.watched.setToolTip(tooltip("\n".join(view.roots)))
        fill_files(self.files, view.files)

    # --- new collections, more folders, a look again, removal ---------------------------------------
    def make(self, name: str, folder: str) -> bool:
        """Make collection `name` from `folder` (the worker indexes it); False and a notice when refused."""
        why = check_name(name, set(self.names))
        if why:
            self.notice.emit(why)
            return False
        self.index_requested.emit(name, folder)
        return True

    def ask_name(self, folder: str) -> TextSheet:
        """The sheet that names a new collection made from `folder` (its folder's name offered)."""
        if self.name_sheet is not None:
            self.name_sheet.deleteLater()  # the one before, done with
        self.name_sheet = TextSheet(self, "New collection", f"Its name, as chats and this list show it. Its "
                                    f"documents come from {Path(folder).name or folder}.",
                                    free_name(Path(folder).name, set(self.names)), save_text="Index it")
        self.name_sheet.saved.connect(lambda name: self.make(name, folder))
        self.name_sheet.open()
        return self.name_sheet

    def _on_new_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A folder for a new collection", str(Path.home()))
        if folder:
            self.ask_name(folder)

    def add_folder(self, name: str) -> None:
        folder = QFileDialog.getExistingDirectory(self, f"A folder to add to {name}", str(Path.home()))
        if folder and name:
            self.index_requested.emit(name, folder)

    def remove(self, name: str) -> bool:
        """Remove collection `name` from the index once the person says so (its files stay); True if asked to."""
        entry = next((e for e in self.entries if e.summary.name == name), None)
        if entry is None:
            return False
        what = plural(entry.summary.chunks, "passage")
        if ask(self, "Remove collection", f"Remove {name} from the index? Its {what} go; its files stay where "
               "they are, and a chat reading it reads nothing more.", default=Button.No) != Button.Yes:
            return False
        self.worker.remove_collection(name)
        return True

