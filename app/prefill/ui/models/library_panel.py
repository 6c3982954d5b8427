"""The local model library on the Models page: list, load, delete, import.

Every look at the disk (the scan reads each model's GGUF header), every delete and
every import runs on the page's pool (`PoolJobs`); the table is refilled from the
result on the GUI thread. Models in the Hugging Face cache and the bundled one are
offered where they are: they load, but Prefill never deletes them. Below the
models, unfinished downloads nobody touched for a week are listed with their size
(hidden when there are none) and can be removed.
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

from prefill.engine.units import format_bytes, format_params
from prefill.hub.abandoned import AbandonedDownload
from prefill.hub.library import ImportMode, LocalModel, ModelLibrary
from prefill.ui.widgets.plain_text import Button, ask, message_box, tooltip
from prefill.ui.workers.pool_jobs import PoolJobs

_COLUMNS = ("Name", "Architecture", "Params", "Quant", "Context", "Template", "Size", "Source", "Images")
_ABANDONED_COLUMNS = ("Unfinished download (untouched for a week)", "Downloaded", "Last written")


class LibraryPanel(QWidget):
    """The models on this machine, with Load, Delete, Import… and Refresh.

    Signals:
        load_requested(str): Load was clicked (the path llama.cpp opens).
        refreshed(): the tables show a fresh scan (models and abandoned downloads).
        error(str): a scan, delete or import failed (a sentence for the user).
    """

    load_requested = Signal(str)
    refreshed = Signal()
    error = Signal(str)

    def __init__(self, library: ModelLibrary, jobs: PoolJobs, parent: QWidget | None = None):
        super().__init__(parent)
        self.library, self.jobs = library, jobs
        self.models: list[LocalModel] = []
        self.abandoned: list[AbandonedDownload] = []
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
        self.abandoned_table = QTableWidget(0, len(_ABANDONED_COLUMNS))
        self.abandoned_table.setObjectName("abandoned-downloads")
        self.abandoned_table.setHorizontalHeaderLabels(list(_ABANDONED_COLUMNS))
        self.abandoned_table.verticalHeader().hide()
        self.abandoned_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.abandoned_table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.abandoned_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.remove_abandoned_button = QPushButton("Remove unfinished…")
        self.abandoned_box = QWidget()
        ab = QVBoxLayout(self.abandoned_box)
        ab.setContentsMargins(0, 0, 0, 0)
        ab.addWidget(self.abandoned_table)
        ab.addWidget(self.remove_abandoned_button, 0, Qt.AlignmentFlag.AlignRight)
        self.abandoned_box.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.abandoned_box)
        self.table.itemSelectionChanged.connect(self._on_table_selection_changed)
        self.table.itemDoubleClicked.connect(lambda _item: self._on_load_button_clicked())
        self.load_button.clicked.connect(self._on_load_button_clicked)
        self.delete_button.clicked.connect(self._on_delete_button_clicked)
        self.import_button.clicked.connect(self._on_import_button_clicked)
        self.refresh_button.clicked.connect(self.refresh)
        self.remove_abandoned_button.clicked.connect(self._on_remove_abandoned_button_clicked)
        self._on_table_selection_changed()

    # --- what the page calls ---------------------------------------------------------------
    def refresh(self) -> None:
        """Scan the library again, off the GUI thread."""
        self._after_change(None)

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

    def _on_remove_abandoned_button_clicked(self) -> None:
        rows = sorted({i.row() for i in self.abandoned_table.selectionModel().selectedRows()})
        chosen = [self.abandoned[r] for r in rows] or list(self.abandoned)
        if not chosen:
            return
        what = chosen[0].name if len(chosen) == 1 else f"{len(chosen)} unfinished downloads"
        answer = ask(
            self, "Remove unfinished downloads",
            f"Remove {what}?\nThis frees {format_bytes(sum(a.size for a in chosen))}; "
            "a removed download starts from the beginning next time.",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        library, names = self.library, [a.path.name for a in chosen]

        def remove() -> None:
            for name in names:
                library.remove_abandoned(name)

        self.jobs.run(remove, then=lambda _r: self._after_change(None),
                      error=self._fail("The unfinished downloads could not all be removed"))

    # --- results ---------------------------------------------------------------------------
    def _after_change(self, select: str | None) -> None:
        library = self.library

        def scan() -> tuple[list[LocalModel], list[AbandonedDownload]]:
            return library.models(), library.abandoned()

        def fill(found: tuple[list[LocalModel], list[AbandonedDownload]]) -> None:
            models, abandoned = found
            self._fill_abandoned(abandoned)
            self._fill(models)
            if select:
                self.select(select)

        self.jobs.run(scan, then=fill, error=self._fail("The library could not be read"))

    def _fill_abandoned(self, abandoned: list[AbandonedDownload]) -> None:
        self.abandoned = list(abandoned)
        t = self.abandoned_table
        t.setRowCount(len(abandoned))
        for row, a in enumerate(abandoned):
            done = f"{format_bytes(a.size)} of {format_bytes(a.total)}"
            values = (a.name, done, a.last_written.astimezone().strftime("%Y-%m-%d %H:%M"))
            for col, text in enumerate(values):
                item = QTableWidgetItem(text)  # a name from the sidecar: plain text, as every item is
                if col == 0:
                    item.setToolTip(str(a.path))
                t.setItem(row, col, item)
        self.abandoned_box.setVisible(bool(abandoned))

    @Slot(object)
    def _fill(self, models: list[LocalModel]) -> None:
        self.models = list(models)
        self.table.setRowCount(len(models))
        for row, m in enumerate(models):
            template = "" if m.error else ("yes" if m.has_chat_template else "no")
            # The projector beside it (loaded with it, so the model sees images); "" for text only.
            images = m.projector.name if m.projector is not None else ""
            values = (m.name, m.architecture, format_params(m.n_params), m.quantization,
                      str(m.context_length or ""), template, format_bytes(m.size), m.source, images)
            for col, text in enumerate(values):
                item = QTableWidgetItem(text)
                if m.error:
                    item.setToolTip(tooltip(f"Unreadable: {m.error}"))
                elif col == 0:
                    item.setToolTip(tooltip(str(m.path) + (f"\nprojector: {m.projector}" if m.projector else "")))
                if col in (2, 4, 6):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, item)
        self._on_table_selection_changed()
        self.refreshed.emit()

    def _fail(self, what: str) -> Callable[[Exception], None]:
        def report(e: Exception) -> None:
            self.error.emit(f"{what}: {e}.")

        return report
