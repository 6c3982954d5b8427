"""The collections: named sets of documents that several chats read, as LocalDocs keeps them.

A list of the collections on the left; on the right the one chosen: its size (files, passages, bytes), its
embedding model, the folders it was made from (watched: a change in them is indexed while Prefill runs),
and its files, each with its pages and passages or, for one that could not be read, the
reason in words. Buttons: read it in this chat, make one from a folder, add a folder to it, remove it from
the index (the files stay where they are). Everything shown comes from the documents worker's signals;
names, paths and problems are outside text, shown plain.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from prefill.documents.index import CollectionSummary, FileRecord
from prefill.engine.units import format_bytes
from prefill.session.document_chats import OWN_PREFIX
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.workers.documents_worker import CollectionView, DocumentsWorker


def size_line(c: CollectionSummary) -> str:
    unread = f" ({c.failed} not readable)" if c.failed else ""
    return f"{c.files} files{unread} · {c.chunks} passages · {format_bytes(c.bytes)}"


def file_line(f: FileRecord) -> str:
    name = Path(f.path).name
    if f.state == "failed":  # the reader's sentence names the file first: not twice
        problem = f.problem[len(name) + 1:].strip() if f.problem.startswith(f"{name}:") else f.problem
        return f"{name} — not read: {problem}"
    pages = f"{f.pages} pages, " if f.pages else ""
    note = f" ({f.problem})" if f.problem else ""
    return f"{name} — {pages}{f.chunks} passage{'s' if f.chunks != 1 else ''}{note}"


def watched_line(roots: tuple[str, ...]) -> str:
    """The files and folders a collection was made from, as watched."""
    if not roots:
        return "Not watched: made before Prefill kept its folders (add a folder to it to watch it)."
    names = ", ".join(roots[:3]) + (f" and {len(roots) - 3} more" if len(roots) > 3 else "")
    return f"Watched: {names} (changes are indexed while Prefill runs)"


def check_name(name: str, taken: set[str]) -> str:
    """Why `name` cannot name a new collection ("" when it can)."""
    if not name.strip():
        return "A collection needs a name."
    if name.startswith(OWN_PREFIX):
        return f"Names starting with {OWN_PREFIX} are kept for a chat's own documents: pick another."
    if name in taken:
        return f"There is a collection named {name} already: pick it in the list, or another name."
    return ""


class CollectionsDialog(QDialog):
    """Signals:
        use_requested(str): read this collection in the open chat.
        index_requested(str, str): index this folder into this collection (a new one, or more for it).
        notice(str): something to say in the window (a refused name).
    """

    use_requested = Signal(str)
    index_requested = Signal(str, str)
    notice = Signal(str)

    def __init__(self, worker: DocumentsWorker, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("collections-dialog")
        self.setWindowTitle("Document collections")
        self.worker = worker
        self.names: list[str] = []
        self.view: CollectionView | None = None
        self.list = QListWidget()
        self.list.setObjectName("collections-list")
        self.list.currentTextChanged.connect(self._on_list_current)
        self.title = plain_label("No collection chosen")
        self.title.setObjectName("collection-name")
        self.title.setStyleSheet("font-weight: 600;")
        self.size_label = plain_label("")
        self.size_label.setObjectName("collection-size")
        self.model = plain_label("")
        self.model.setObjectName("collection-model")
        self.model.setWordWrap(True)
        self.watched = plain_label("")
        self.watched.setObjectName("collection-watched")
        self.watched.setWordWrap(True)
        self.files = QListWidget()
        self.files.setObjectName("collection-files")
        self.files.setWordWrap(True)
        self.use = QPushButton("Read in this chat")
        self.use.setObjectName("collection-use")
        self.add = QPushButton("Add a folder…")
        self.add.setObjectName("collection-add")
        self.remove = QPushButton("Remove from the index")
        self.remove.setObjectName("collection-remove")
        self.remove.setToolTip("The collection's passages go; its files stay where they are")
        self.new = QPushButton("New from a folder…")
        self.new.setObjectName("collection-new")
        self.use.clicked.connect(lambda: self.use_requested.emit(self.current))
        self.add.clicked.connect(self._on_add_clicked)
        self.remove.clicked.connect(lambda: self.worker.remove_collection(self.current))
        self.new.clicked.connect(self._on_new_clicked)
        left = QVBoxLayout()
        left.addWidget(plain_label("Collections"))
        left.addWidget(self.list, 1)
        left.addWidget(self.new)
        right = QVBoxLayout()
        right.addWidget(self.title)
        right.addWidget(self.size_label)
        right.addWidget(self.model)
        right.addWidget(self.watched)
        right.addWidget(plain_label("Files"))
        right.addWidget(self.files, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.use)
        buttons.addWidget(self.add)
        buttons.addStretch(1)
        buttons.addWidget(self.remove)
        right.addLayout(buttons)
        lay = QHBoxLayout(self)
        lay.addLayout(left, 1)
        lay.addLayout(right, 2)
        worker.collections.connect(self._on_worker_collections)
        worker.collection.connect(self._on_worker_collection)
        self._show(None)
        self.resize(760, 440)

    @property
    def current(self) -> str:
        item = self.list.currentItem()
        return item.text() if item is not None else ""

    def refresh(self) -> None:
        """Ask for the collections again (after a job, a removal)."""
        self.worker.list_collections()

    def _on_worker_collections(self, found: list[CollectionSummary]) -> None:
        keep = self.current
        self.names = [c.name for c in found if not c.name.startswith(OWN_PREFIX)]
        self.list.blockSignals(True)
        self.list.clear()
        for name in self.names:
            self.list.addItem(QListWidgetItem(name))
        self.list.blockSignals(False)
        at = self.names.index(keep) if keep in self.names else 0 if self.names else -1
        self.list.setCurrentRow(at)
        if at >= 0:
            self.worker.read_collection(self.names[at])
        else:
            self._show(None)

    def _on_list_current(self, name: str) -> None:
        if name:
            self.worker.read_collection(name)
        else:
            self._show(None)

    def _on_worker_collection(self, name: str, view: CollectionView | None) -> None:
        if name == self.current:
            self._show(view)

    def _show(self, view: CollectionView | None) -> None:
        self.view = view
        for b in (self.use, self.add, self.remove):
            b.setEnabled(view is not None)
        self.files.clear()
        if view is None:
            self.title.setText("No collection chosen" if self.names else "No collections yet: make one from a folder")
            self.size_label.setText("")
            self.model.setText("")
            self.watched.setText("")
            return
        c = view.summary
        self.title.setText(c.name)
        self.size_label.setText(size_line(c))
        self.model.setText(f"Embedding model: {c.model_id or 'none yet'}" + (f" · {c.n_embd} numbers a passage"
                                                                             if c.n_embd else ""))
        self.watched.setText(watched_line(view.roots))
        self.watched.setToolTip(tooltip("\n".join(view.roots)))
        for f in view.files:
            item = QListWidgetItem(file_line(f))
            item.setToolTip(tooltip(f.path))
            if f.state == "failed":
                item.setForeground(self.palette().placeholderText())
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.files.addItem(item)

    # --- new collections and more folders ---------------------------------------------------------
    def make(self, name: str, folder: str) -> bool:
        """Make collection `name` from `folder` (the worker indexes it); False and a notice when refused."""
        why = check_name(name, set(self.names))
        if why:
            self.notice.emit(why)
            return False
        self.index_requested.emit(name, folder)
        return True

    def _on_new_clicked(self) -> None:
        name, ok = QInputDialog.getText(self, "New collection", "Its name:")
        if not ok:
            return
        folder = QFileDialog.getExistingDirectory(self, "The folder to read", str(Path.home()))
        if folder:
            self.make(name.strip(), folder)

    def _on_add_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, f"A folder to add to {self.current}", str(Path.home()))
        if folder and self.current:
            self.index_requested.emit(self.current, folder)
