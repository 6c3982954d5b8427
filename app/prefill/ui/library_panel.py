"""The local model library on the Models page: list, load, delete, import.

Every look at the disk (the scan reads each model's GGUF header), every delete and
every import runs on the page's pool (`PoolJobs`); the table is refilled from the
result on the GUI thread. Models in the Hugging Face cache and the bundled one are
offered where they are: they load, but Prefill never deletes them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from prefill.hub.library import ImportMode, LocalModel, ModelLibrary
from prefill.ui.download_worker import format_bytes
from prefill.ui.plain_text import Button, ask, message_box, tooltip
from prefill.ui.pool_jobs import PoolJobs

_COLUMNS = ("Name", "Architecture", "Params", "Quant", "Context", "Template", "Size", "Source")


def format_params(n: int) -> str:
    """`1.24B`, `135M`, or an empty string when unknown."""
    if n <= 0:
        return ""
    if n >= 1e8:
        return f"{n / 1e9:.2f}B"
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


class LibraryPanel(QWidget):
    """The models on this machine, with Load, Delete, Import… and Refresh.

    Signals:
        load_requested(str): Load was clicked (the path llama.cpp opens).
        refreshed(): the table shows a fresh scan.
        error(str): a scan, delete or import failed (a sentence for the user).
    """

    load_requested = Signal(str)
    refreshed = Signal()
    error = Signal(str)

    def __init__(self, library: ModelLibrary, jobs: PoolJobs, parent: QWidget | None = None):
        super().__init__(parent)
        self.library, self.jobs = library, jobs
        self.models: list[LocalModel] = []
        self.table = QTableWidget(0, len(_COLUMNS))
        self.table.setObjectName("library")
        self.table.setHorizontalHeaderLabels(list(_COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.load_button = QPushButton("Load")
        self.delete_button = QPushButton("Delete…")
        self.import_button = QPushButton("Import…")
        self.refresh_button = QPushButton("Refresh")
        buttons = QHBoxLayout()
        for b in (self.load_button, self.delete_button, self.import_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.refresh_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self.table.itemSelectionChanged.connect(self._on_table_selection_changed)
        self.table.itemDoubleClicked.connect(lambda _item: self._on_load_button_clicked())
        self.load_button.clicked.connect(self._on_load_button_clicked)
        self.delete_button.clicked.connect(self._on_delete_button_clicked)
        self.import_button.clicked.connect(self._on_import_button_clicked)
        self.refresh_button.clicked.connect(self.refresh)
        self._on_table_selection_changed()

    # --- what the page calls ---------------------------------------------------------------
    def refresh(self) -> None:
        """Scan the library again, off the GUI thread."""
        self.jobs.run(self.library.models, then=self._fill,
                      error=self._fail("The library could not be read"))

    def select(self, name: str) -> None:
        for row, m in enumerate(self.models):
            if m.name == name:
                self.table.selectRow(row)
                return

    def selected(self) -> LocalModel | None:
        rows = self.table.selectionModel().selectedRows()
        return self.models[rows[0].row()] if rows else None

    def import_file(self, path: Path, mode: ImportMode) -> None:
        """Copy or link a .gguf into the library, then show it selected."""
        def done(m: LocalModel) -> None:
            self._after_change(m.name)

        self.jobs.run(self.library.import_file, path, mode, then=done,
                      error=self._fail(f"{path.name} could not be imported"))

    # --- slots -----------------------------------------------------------------------------
    def _on_table_selection_changed(self) -> None:
        m = self.selected()
        self.load_button.setEnabled(m is not None and m.error is None)
        self.delete_button.setEnabled(m is not None and m.removable)

    def _on_load_button_clicked(self) -> None:
        m = self.selected()
        if m is not None and m.error is None:
            self.load_requested.emit(str(m.path))

    def _on_delete_button_clicked(self) -> None:
        m = self.selected()
        if m is None or not m.removable:
            return
        what = "the link (the file it points to stays)" if m.path.is_symlink() else format_bytes(m.size)
        answer = ask(self, "Delete model", f"Delete {m.name} from the library?\nThis frees {what}.")
        if answer != Button.Yes:
            return
        self.jobs.run(self.library.delete, m.name, then=lambda _m: self._after_change(None),
                      error=self._fail(f"{m.name} could not be deleted"))

    def _on_import_button_clicked(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Import a model", str(Path.home()), "GGUF models (*.gguf)")
        if not path:
            return
        question = f"Copy {Path(path).name} into the library, or link to it where it is?"
        box = message_box(self, "Import a model", question, Button.NoButton)
        copy = box.addButton("Copy", QMessageBox.ButtonRole.AcceptRole)
        link = box.addButton("Link", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(Button.Cancel)
        box.exec()
        if box.clickedButton() in (copy, link):
            self.import_file(Path(path), "copy" if box.clickedButton() is copy else "symlink")

    # --- results ---------------------------------------------------------------------------
    def _after_change(self, select: str | None) -> None:
        def fill(models: list[LocalModel]) -> None:
            self._fill(models)
            if select:
                self.select(select)

        self.jobs.run(self.library.models, then=fill, error=self._fail("The library could not be read"))

    @Slot(object)
    def _fill(self, models: list[LocalModel]) -> None:
        self.models = list(models)
        self.table.setRowCount(len(models))
        for row, m in enumerate(models):
            template = "" if m.error else ("yes" if m.has_chat_template else "no")
            values = (m.name, m.architecture, format_params(m.n_params), m.quantization,
                      str(m.context_length or ""), template, format_bytes(m.size), m.source)
            for col, text in enumerate(values):
                item = QTableWidgetItem(text)
                if m.error:
                    item.setToolTip(tooltip(f"Unreadable: {m.error}"))
                elif col == 0:
                    item.setToolTip(tooltip(str(m.path)))
                if col in (2, 4, 6):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, item)
        self._on_table_selection_changed()
        self.refreshed.emit()

    def _fail(self, what: str) -> Callable[[Exception], None]:
        def report(e: Exception) -> None:
            self.error.emit(f"{what}: {e}.")

        return report
