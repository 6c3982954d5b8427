"""The Models page (a tab of the main window): search the hub, read a model card, pick a file
by size and fit, download, manage the library.

Top left: a search box, the matching GGUF repositories (downloads, likes, last update;
click a header to sort) and, below them, models suggested for this machine's memory.
Top right: the selected repository's models grouped by quantisation, each with its size,
a "Downloaded" marker when the library has it, and a fit badge read from the file's
remote header with a few ranged requests; under them the repository's model card.
Below: the download queue and the local library. Every request and every disk read runs
on the page's `PoolJobs`; results come back by signal, errors are shown as a sentence.
A new search or another repository clears what the last one showed at once, and a late
answer for it is dropped (each job carries the number of the search or listing it is for).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.llama.hardware import MachineMemory, machine_memory
from prefill.engine.llama.memory_fit import (
    FitEstimate,
    estimate_fit,
    estimate_local,
    fit_vs_actual,
    with_projector,
)
from prefill.hub.client import HubClient, RepoListing, RepoSummary, SortKey
from prefill.hub.library import ModelLibrary
from prefill.hub.model_card import ModelCard, fetch_model_card
from prefill.hub.quants import ModelFiles
from prefill.hub.remote_header import fetch_header
from prefill.hub.suggested import Suggestion, suggest
from prefill.session.loaded import LoadedModel
from prefill.ui.markdown.rich_text import CodePalette
from prefill.ui.models import repo_files
from prefill.ui.models.card_view import CardView
from prefill.ui.models.download_worker import DownloadQueuePanel, DownloadWorker
from prefill.ui.models.hub_words import hub_error_text
from prefill.ui.models.library_panel import LibraryPanel
from prefill.ui.models.suggestions_panel import SuggestionsPanel
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.workers.pool_jobs import PoolJobs

_SORTS: tuple[tuple[str, SortKey], ...] = (
    ("Most downloads", "downloads"), ("Most likes", "likes"), ("Recently updated", "last_modified"))
_MODEL = Qt.ItemDataRole.UserRole


class ModelsPage(QWidget):
    """Search, download and manage models.

    Args:
        client: the hub client.
        library: the local library.
        downloads: the download queue (it outlives the page: downloads go on when it closes).
        n_ctx: the context length fit estimates plan for (the current setting).
        kv_type: the KV cache type fit estimates plan for.
        memory: free RAM and VRAM now (tests give a fixed machine).
        palette: the colours the model card's code and links are drawn in (the theme's).

    Signals:
        load_requested(str): a local model's path to load (library Load, or a finished download's).
        fit_compared(str): after `compare_loaded`, the estimate beside what the load used.
        message_shown(str): the sentence the page shows (an error, or what happened).
        card_shown(str): the model card of that repository is in view (or that it has none).
    """

    load_requested = Signal(str)
    fit_compared = Signal(str)
    message_shown = Signal(str)
    card_shown = Signal(str)

    def __init__(self, client: HubClient, library: ModelLibrary, downloads: DownloadWorker,
                 n_ctx: Callable[[], int], kv_type: Callable[[], str],
                 memory: Callable[[], MachineMemory] = machine_memory, palette: CodePalette | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.client, self.library, self.downloads = client, library, downloads
        self._n_ctx, self._kv_type, self._memory = n_ctx, kv_type, memory
        self.jobs = PoolJobs(parent=self)
        self.listing: RepoListing | None = None
        self.fits: dict[str, FitEstimate | Exception] = {}
        self._search_job = self._list_job = 0
        self._select_after_listing: str | None = None
        self._library_keys: set[str] = set()
        self._memory_before: dict[str, MachineMemory] = {}
        self._build(palette)
        self._wire()
        self.library_panel.refresh()
        self.refresh_suggestions()

    # --- layout ----------------------------------------------------------------------------
    def _build(self, palette: CodePalette | None) -> None:
        self.query = QLineEdit()
        self.query.setPlaceholderText("Search GGUF models on Hugging Face (e.g. qwen, llama 3.2)")
        self.query.setAccessibleName("Search Hugging Face")
        self.sort = QComboBox()
        self.sort.setAccessibleName("Sort results")
        for label, key in _SORTS:
            self.sort.addItem(label, key)
        self.search_button = QPushButton("Search")
        self.message = plain_label()
        self.message.setObjectName("models-message")
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # errors quote hub names: never rich text
        self.message.setWordWrap(True)
        self.message.hide()
        self.results = QTableWidget(0, 4)
        self.results.setObjectName("search-results")
        self.results.setAccessibleName("Search results")
        self.results.setHorizontalHeaderLabels(["Repository", "Downloads", "Likes", "Updated"])
        self.results.verticalHeader().hide()
        self.results.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.results.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.results.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.results.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.suggestions = SuggestionsPanel()
        self.repo_title = plain_label("")
        self.repo_title.setObjectName("repo-title")
        self.files = repo_files.make_tree()
        self.download_button = QPushButton("Download")
        self.download_button.setEnabled(False)
        self.card = CardView(palette)
        self.queue = DownloadQueuePanel(self.downloads)
        self.library_panel = LibraryPanel(self.library, self.jobs)

        row = QHBoxLayout()
        row.addWidget(self.query, 1)
        row.addWidget(self.sort)
        row.addWidget(self.search_button)
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.results)
        left.addWidget(_boxed("Suggested for this machine", self.suggestions))
        left.setSizes([200, 300])
        files_box = QWidget()
        fl = QVBoxLayout(files_box)
        fl.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(self.repo_title, 1)
        head.addWidget(self.download_button)
        fl.addLayout(head)
        fl.addWidget(self.files, 1)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(files_box)
        right.addWidget(_boxed("Model card", self.card))
        right.setSizes([240, 260])
        browse = QSplitter(Qt.Orientation.Horizontal)
        browse.addWidget(left)
        browse.addWidget(right)
        browse.setSizes([440, 880])
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addLayout(row)
        tl.addWidget(browse, 1)
        parts = QSplitter(Qt.Orientation.Vertical)
        parts.addWidget(_boxed("Hugging Face", top))
        parts.addWidget(_boxed("Downloads", self.queue))
        parts.addWidget(_boxed("On this machine", self.library_panel))
        parts.setSizes([620, 90, 170])
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(parts, 1)

    def _wire(self) -> None:
        self.query.returnPressed.connect(self.search)
        self.search_button.clicked.connect(self.search)
        self.results.itemSelectionChanged.connect(self._on_results_selection_changed)
        self.suggestions.chosen.connect(self._on_suggestions_chosen)
        self.files.itemSelectionChanged.connect(self._on_files_selection_changed)
        self.files.itemDoubleClicked.connect(lambda _i, _c: self._on_download_button_clicked())
        self.download_button.clicked.connect(self._on_download_button_clicked)
        self.queue.load_requested.connect(self._on_panels_load_requested)
        self.queue.finished.connect(self._on_queue_finished)
        self.queue.error.connect(self.show_message)
        self.queue.state_changed.connect(lambda _e: self._show_markers())  # not per progress report
        self.downloads.error.connect(self.show_message)
        self.library_panel.load_requested.connect(self._on_panels_load_requested)
        self.library_panel.refreshed.connect(self._on_library_refreshed)
        self.library_panel.error.connect(self.show_message)
        self.jobs.failed.connect(lambda e: self.show_message(f"Something went wrong: {e}."))

    # --- what the window calls -------------------------------------------------------------
    def search(self) -> None:
        """Search the hub for the query in the box, off the GUI thread. What the last search
        showed goes at once: its results, the repository's files, its card and Download."""
        query, sort = self.query.text().strip(), self.sort.currentData()
        self.results.clearSelection()
        self.results.setRowCount(0)
        self._clear_repository()
        self.show_message("Searching…")
        job = self._search_job = self._search_job + 1
        self.jobs.run(self.client.search, query, sort,
                      then=lambda hits: self._on_search_done(job, query, sort, hits),
                      error=lambda e: self._on_hub_failed(job, "_search_job", "The search failed", e))

    def open_repository(self, repo_id: str, select: str | None = None) -> None:
        """List a repository's models and fetch its model card, off the GUI thread; `select`
        names a file (its first part) to select once listed."""
        self._clear_repository()
        self._select_after_listing = select
        self.repo_title.setText(repo_id)
        self.card.show_status(f"Reading the model card of {repo_id}…")
        self.show_message(f"Listing {repo_id}…")
        job = self._list_job = self._list_job + 1
        client, memory = self.client, self._memory

        def listing() -> tuple[RepoListing, MachineMemory]:
            return client.list_models(repo_id), memory()

        failed = f"{repo_id} could not be listed"
        self.jobs.run(listing, then=lambda r: self._on_listing_done(job, *r),
                      error=lambda e: self._on_hub_failed(job, "_list_job", failed, e))
        self.jobs.run(fetch_model_card, client, repo_id,
                      then=lambda card: self._on_card_done(job, repo_id, card),
                      error=lambda e: self._on_card_failed(job, repo_id, e))

    def refresh_suggestions(self) -> None:
        """Fill the suggestions for this machine's free memory now (probed off the GUI thread)."""
        memory, n_ctx = self._memory, self._n_ctx()
        self.jobs.run(lambda: suggest(memory(), n_ctx), then=self.suggestions.fill,
                      error=lambda e: self.suggestions.note.setText(f"No suggestions: {e}."))

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))
        self.message_shown.emit(text)

    def compare_loaded(self, loaded: LoadedModel) -> None:
        """Compare a loaded model with its estimate, off the GUI thread; emits `fit_compared`.

        The verdict is only given when the page saw the load coming (its memory was
        measured before the model took any); the byte counts are compared always.
        """
        path, n_ctx = str(loaded.path), loaded.n_ctx
        kv_total, used = n_ctx * loaded.bytes_per_cell, loaded.model_bytes
        before = self._memory_before.pop(path, None)
        kv_type, memory = self._kv_type(), self._memory

        def compare() -> str:
            estimate = estimate_local(path, n_ctx, kv_type, before or memory())
            return fit_vs_actual(estimate, used, kv_total, verdict=before is not None)

        self.jobs.run(compare, then=self.fit_compared.emit,
                      error=lambda e: self.fit_compared.emit(f"No fit estimate for this model: {e}."))

    def close_jobs(self, timeout_ms: int = -1) -> bool:
        """Wait for running lookups (on quit); the download queue is closed by its owner."""
        return self.jobs.close(timeout_ms)

    # --- search and listing ----------------------------------------------------------------
    def _clear_repository(self) -> None:
        self._list_job += 1  # whatever the last repository still has on its way is dropped
        self.files.clear()
        self.listing, self.fits = None, {}
        self.repo_title.setText("")
        self.card.show_status("Choose a repository to read its model card.")
        self._on_files_selection_changed()

    def _on_search_done(self, job: int, query: str, sort: SortKey, hits: list[RepoSummary]) -> None:
        if job != self._search_job:
            return
        self.results.setSortingEnabled(False)
        self.results.clearSelection()
        self.results.clearContents()
        self.results.setRowCount(len(hits))
        for row, h in enumerate(hits):
            name = QTableWidgetItem(h.repo_id + ("  (gated)" if h.gated else ""))
            name.setData(_MODEL, h.repo_id)
            self.results.setItem(row, 0, name)
            self.results.setItem(row, 1, _number(h.downloads))
            self.results.setItem(row, 2, _number(h.likes))
            self.results.setItem(row, 3, QTableWidgetItem(_date(h.last_modified)))
        # Show the hub's order (its sort key, best first) until a header is clicked.
        column = {"downloads": 1, "likes": 2, "last_modified": 3}[sort]
        self.results.horizontalHeader().setSortIndicator(column, Qt.SortOrder.DescendingOrder)
        self.results.setSortingEnabled(True)
        self.show_message("" if hits else f"No GGUF repositories match {query!r}.")

    def _on_results_selection_changed(self) -> None:
        rows = self.results.selectionModel().selectedRows()
        item = self.results.item(rows[0].row(), 0) if rows else None
        repo_id = item.data(_MODEL) if item is not None else None
        if repo_id:
            self.open_repository(repo_id)

    def _on_suggestions_chosen(self, s: Suggestion) -> None:
        self.results.clearSelection()
        self.open_repository(s.repo_id, select=s.filename)

    def _on_listing_done(self, job: int, listing: RepoListing, memory: MachineMemory) -> None:
        if job != self._list_job:
            return
        self.listing = listing
        self.show_message("" if listing.models else f"{listing.repo_id} holds no GGUF model.")
        n_ctx, kv_type = self._n_ctx(), self._kv_type()
        for m, item in repo_files.fill_tree(self.files, listing.models):
            self._estimate(job, listing.repo_id, m, item, n_ctx, kv_type, memory)
            if m.first.filename == self._select_after_listing:
                self.files.setCurrentItem(item)
        self._show_markers()

    def _on_card_done(self, job: int, repo_id: str, card: ModelCard | None) -> None:
        if job == self._list_job:
            self.card.show_card(card, repo_id)
            self.card_shown.emit(repo_id)

    def _on_card_failed(self, job: int, repo_id: str, e: Exception) -> None:
        if job == self._list_job:
            self.card.show_status(f"The model card of {repo_id} could not be read: {e}.")
            self.card_shown.emit(repo_id)

    def _estimate(self, job: int, repo_id: str, m: ModelFiles, item: QTreeWidgetItem,
                  n_ctx: int, kv_type: str, memory: MachineMemory) -> None:
        client = self.client

        def fit() -> FitEstimate:
            headers = [fetch_header(client, repo_id, p.filename) for p in m.parts]
            if m.projector is not None:  # its weights and one image's KV count too
                projector = fetch_header(client, repo_id, m.projector.filename)
                return with_projector(headers, projector, n_ctx, memory, kv_type)
            return estimate_fit(headers, n_ctx, memory, kv_type)

        def show(result: FitEstimate | Exception) -> None:
            badge = repo_files.badge(self.files, item) if job == self._list_job else None
            if badge is None:
                return
            self.fits[m.name] = result
            if isinstance(result, Exception):
                badge.set_unknown(f"no estimate: {result}")
            else:
                badge.set_estimate(result)

        self.jobs.run(fit, then=show, error=show)

    def _on_hub_failed(self, job: int, which: str, what: str, e: Exception) -> None:
        if job == getattr(self, which):
            self.show_message(f"{what}: {hub_error_text(e)}.")

    # --- downloads and loads ---------------------------------------------------------------
    def selected_model(self) -> ModelFiles | None:
        items = self.files.selectedItems()
        m = items[0].data(0, _MODEL) if items else None
        return m if isinstance(m, ModelFiles) else None

    def _on_files_selection_changed(self) -> None:
        m, listing = self.selected_model(), self.listing
        if m is None or listing is None or not m.complete:
            self.download_button.setText("Download")
            self.download_button.setEnabled(False)
        elif repo_files.is_downloaded(self._library_keys, listing.repo_id, m):
            self.download_button.setText("Downloaded")
            self.download_button.setEnabled(False)
        elif m.name in self.queue.active_names(listing.repo_id):
            self.download_button.setText("Downloading…")
            self.download_button.setEnabled(False)
        else:
            self.download_button.setText("Download")
            self.download_button.setEnabled(True)

    def _on_download_button_clicked(self) -> None:
        m, listing = self.selected_model(), self.listing
        if m is None or listing is None or not self.download_button.isEnabled():
            return
        self.downloads.add(listing.repo_id, m, listing.commit)
        self.download_button.setEnabled(False)  # until its queued event says it is on its way
        self.show_message(f"{m.name} is queued; it appears under On this machine when done.")

    def _on_queue_finished(self, e: object) -> None:
        name = getattr(getattr(e, "model", None), "name", "")
        if name and self.message.text().startswith(f"{name} is queued"):
            self.show_message(f"{name} is downloaded: it is listed under On this machine.")
        self.library_panel.refresh()

    def _on_library_refreshed(self) -> None:
        self._library_keys = repo_files.library_keys(self.library_panel.models)
        self._show_markers()

    def _show_markers(self) -> None:
        if self.listing is not None:
            repo_id = self.listing.repo_id
            repo_files.mark(self.files, repo_id, self._library_keys, self.queue.active_names(repo_id))
        self._on_files_selection_changed()

    def _on_panels_load_requested(self, path: str) -> None:
        """Measure free memory first (for `compare_loaded`), then ask for the load."""
        def remember(memory: MachineMemory) -> None:
            self._memory_before[path] = memory
            self.load_requested.emit(path)

        self.jobs.run(self._memory, then=remember, error=lambda _e: self.load_requested.emit(path))


def _boxed(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.addWidget(widget)
    return box


def _number(n: int) -> QTableWidgetItem:
    item = QTableWidgetItem()
    item.setData(Qt.ItemDataRole.DisplayRole, n)  # an int, so the column sorts by value
    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _date(when: datetime | None) -> str:
    return when.date().isoformat() if when else ""
