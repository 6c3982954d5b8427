"""The local model library on the Models page: list, load, delete, import.

Every look at the disk (the scan reads each model's GGUF header), every delete and
every import runs on the page's pool (`PoolJobs`); the list is refilled from the
result on the GUI thread. Each model is a card (its name; what its header says; where
it is from), in a list that scrolls, with Load, Delete…, Import… and Refresh in a bar
under it that never scrolls away. Models in the Hugging Face cache and the bundled one
are offered where they are: they load, but Prefill never deletes them. Below the models,
unfinished downloads nobody touched for a week are listed with their size (hidden when
there are none) and can be removed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.units import format_bytes
from prefill.hub.abandoned import AbandonedDownload
from prefill.hub.library import ImportMode, LocalModel, ModelLibrary
from prefill.ui.models.card_words import abandoned_card, library_card
from prefill.ui.models.list_cards import CardModel, card_list
from prefill.ui.widgets.plain_text import Button, ask, message_box, plain_label
from prefill.ui.widgets.tokens import SPACE
from prefill.ui.workers.pool_jobs import PoolJobs


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
        self.cards = CardModel(self)
        self.list = card_list("library", "Models on this machine", self.cards)
        self.load_button = QPushButton("Load")
        self.delete_button = QPushButton("Delete…")
        self.import_button = QPushButton("Import…")
        self.refresh_button = QPushButton("Refresh")
        buttons = QHBoxLayout()
        for b in (self.load_button, self.delete_button, self.import_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.refresh_button)
        self.abandoned_cards = CardModel(self)
        self.abandoned_list = card_list("abandoned-downloads", "Unfinished downloads", self.abandoned_cards)
        self.abandoned_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.remove_abandoned_button = QPushButton("Remove unfinished…")
        self.abandoned_box = QWidget()
        ab = QVBoxLayout(self.abandoned_box)
        ab.setContentsMargins(0, 0, 0, 0)
        note = plain_label("Unfinished downloads nobody touched for a week:")
        note.setObjectName("section-note")
        head = QHBoxLayout()
        head.addWidget(note, 1)
        head.addWidget(self.remove_abandoned_button)
        ab.addLayout(head)
        ab.addWidget(self.abandoned_list)
        self.abandoned_box.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(SPACE.sm)
        layout.addWidget(self.list, 3)
        layout.addWidget(self.abandoned_box, 1)
        layout.addLayout(buttons)  # last: in view at every size, whatever the lists hold
        self.list.selectionModel().selectionChanged.connect(lambda *_: self._on_table_selection_changed())
        self.list.doubleClicked.connect(lambda _index: self._on_load_button_clicked())
        self.list.activated.connect(lambda _index: self._on_load_button_clicked())
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
                self.select_row(row)
                return

    def select_row(self, row: int) -> None:
        self.list.setCurrentIndex(self.cards.index(row))

    def selected(self) -> LocalModel | None:
        rows = self.list.selectionModel().selectedIndexes()
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
        rows = sorted({i.row() for i in self.abandoned_list.selectionModel().selectedIndexes()})
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
        self.abandoned = list(abandoned)  # names from sidecars: painted as text, as every card is
        self.abandoned_cards.set_cards([abandoned_card(a) for a in abandoned])
        self.abandoned_box.setVisible(bool(abandoned))

    @Slot(object)
    def _fill(self, models: list[LocalModel]) -> None:
        self.models = list(models)
        self.cards.set_cards([library_card(m) for m in models])
        self._on_table_selection_changed()
        self.refreshed.emit()

    def _fail(self, what: str) -> Callable[[Exception], None]:
        def report(e: Exception) -> None:
            self.error.emit(f"{what}: {e}.")

        return report
