"""The Models page (a tab of the main window): discover models on the hub, follow downloads, manage
the models on this machine.

Three sections, switched by a row of buttons at the top, each with the page's whole height (so
nothing shrinks to a sliver at 900×600 or beside the Serve panel):

- Discover: a search box; the results as cards (name, author, downloads as "900K", likes, when it
  changed, the usual file's size and a fit chip), or, before any search, models suggested for this
  machine's memory; beside them one details pane: the chosen repository's models grouped by
  quantisation, each with its size, "Downloaded" when the library has it and a fit badge read from
  the file's remote header with a few ranged requests; under them its model card.
- Downloads: the queue (`download_list.py`).
- On this machine: the library (`library_panel.py`), its buttons always in view.

Beside the section buttons a status line of a fixed height says what happened (an error, a
download queued); it never moves the page. Every request and every disk read runs on the page's
`PoolJobs`; results come back by signal, errors are shown as a sentence. A new search or another
repository clears what the last one showed at once, and a late answer for it is dropped (each job
carries the number of the search or listing it is for).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QItemSelection, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
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
from prefill.ui.models.card_words import result_card, short_count, suggestion_card, updated_words
from prefill.ui.models.details_pane import DetailsPane
from prefill.ui.models.download_list import DownloadQueuePanel
from prefill.ui.models.download_worker import DownloadWorker
from prefill.ui.models.hub_words import hub_error_text
from prefill.ui.models.library_panel import LibraryPanel
from prefill.ui.models.list_cards import CARD_ROLE, Card, CardModel, card_list
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.tokens import SPACE, TYPE
from prefill.ui.workers.pool_jobs import PoolJobs

_SORTS: tuple[tuple[str, SortKey], ...] = (
    ("Most downloads", "downloads"), ("Most likes", "likes"), ("Recently updated", "last_modified"))
_MODEL = Qt.ItemDataRole.UserRole
SEARCH_LIMIT = 100
SECTIONS = ("discover", "downloads", "library")
_SECTION_WORDS = {"discover": "Discover", "downloads": "Downloads", "library": "On this machine"}


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
        self.suggestions: list[tuple[Suggestion, FitEstimate]] = []
        self.searched = False  # the results list shows a search's hits (else the suggestions)
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
        self.section_buttons: dict[str, QPushButton] = {}
        self.section_group = QButtonGroup(self)
        self.stack = QStackedWidget()
        self.message = _status_line()
        top = QHBoxLayout()
        top.setSpacing(SPACE.xs)
        for name in SECTIONS:
            b = QPushButton(_SECTION_WORDS[name])
            b.setObjectName("models-section")
            b.setCheckable(True)
            self.section_group.addButton(b)
            self.section_buttons[name] = b
            top.addWidget(b)
        top.addSpacing(SPACE.md)
        top.addWidget(self.message, 1)

        self.query = QLineEdit()
        self.query.setPlaceholderText("Search GGUF models on Hugging Face (e.g. qwen, llama 3.2)")
        self.query.setAccessibleName("Search Hugging Face")
        self.query.setClearButtonEnabled(True)
        self.sort = QComboBox()
        self.sort.setAccessibleName("Sort results")
        for label, key in _SORTS:
            self.sort.addItem(label, key)
        self.search_button = QPushButton("Search")
        self.result_cards = CardModel(self)
        self.results = card_list("search-results", "Search results", self.result_cards)
        self.results_title = plain_label("Suggested for this machine")
        self.results_title.setObjectName("section-note")
        self.details = DetailsPane(palette)
        self.repo_title, self.files, self.card = self.details.title, self.details.files, self.details.card
        self.download_button = self.details.download_button
        row = QHBoxLayout()
        row.addWidget(self.query, 1)
        row.addWidget(self.sort)
        row.addWidget(self.search_button)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.setSpacing(SPACE.xs)
        ll.addWidget(self.results_title)
        ll.addWidget(self.results, 1)
        browse = QSplitter(Qt.Orientation.Horizontal)
        browse.setObjectName("models-browse")
        browse.setChildrenCollapsible(False)
        browse.addWidget(left)
        browse.addWidget(self.details)
        browse.setStretchFactor(1, 1)
        browse.setSizes([330, 670])  # a third for the cards, at every width
        discover = QWidget()
        dl = QVBoxLayout(discover)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.setSpacing(SPACE.sm)
        dl.addLayout(row)
        dl.addWidget(browse, 1)

        self.queue = DownloadQueuePanel(self.downloads)
        self.library_panel = LibraryPanel(self.library, self.jobs)
        for section in (discover, self.queue, self.library_panel):
            self.stack.addWidget(section)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE.md, SPACE.sm, SPACE.md, SPACE.sm)
        layout.setSpacing(SPACE.sm)
        layout.addLayout(top)
        layout.addWidget(self.stack, 1)
        self.show_section("discover")

    def _wire(self) -> None:
        for name, b in self.section_buttons.items():
            b.clicked.connect(lambda _c=False, n=name: self.show_section(n))
        self.query.returnPressed.connect(self.search)
        self.search_button.clicked.connect(self.search)
        self.sort.activated.connect(lambda _i: self.search() if self.searched else None)
        self.results.selectionModel().selectionChanged.connect(self._on_results_selection_changed)
        self.files.itemSelectionChanged.connect(self._on_files_selection_changed)
        self.files.itemDoubleClicked.connect(lambda _i, _c: self._on_download_button_clicked())
        self.download_button.clicked.connect(self._on_download_button_clicked)
        self.queue.load_requested.connect(self._on_panels_load_requested)
        self.queue.finished.connect(self._on_queue_finished)
        self.queue.error.connect(self.show_message)
        self.queue.state_changed.connect(self._on_queue_state_changed)  # not per progress report
        self.downloads.error.connect(self.show_message)
        self.library_panel.load_requested.connect(self._on_panels_load_requested)
        self.library_panel.refreshed.connect(self._on_library_refreshed)
        self.library_panel.error.connect(self.show_message)
        self.jobs.failed.connect(lambda e: self.show_message(f"Something went wrong: {e}."))

    # --- what the window calls -------------------------------------------------------------
    def show_section(self, name: str) -> None:
        """Bring "discover", "downloads" or "library" to the front."""
        self.section_buttons[name].setChecked(True)
        self.stack.setCurrentIndex(SECTIONS.index(name))

    def section(self) -> str:
        return SECTIONS[self.stack.currentIndex()]

    def search(self) -> None:
        """Search the hub for the query in the box, off the GUI thread. What the last search
        showed goes at once: its results, the repository's files, its card and Download."""
        query, sort = self.query.text().strip(), self.sort.currentData()
        self.results.clearSelection()
        self.result_cards.set_cards([])
        self.searched = True
        self.results_title.setText("Searching…")
        self._clear_repository()
        self.show_message("Searching…")
        job = self._search_job = self._search_job + 1
        client, memory = self.client, self._memory

        def found() -> tuple[list[RepoSummary], MachineMemory]:
            return client.search(query, sort, SEARCH_LIMIT), memory()

        self.jobs.run(found, then=lambda r: self._on_search_done(job, query, *r),
                      error=lambda e: self._on_hub_failed(job, "_search_job", "The search failed", e))

    def open_repository(self, repo_id: str, select: str | None = None) -> None:
        """List a repository's models and fetch its model card, off the GUI thread; `select`
        names a file (its first part) to select once listed."""
        self._clear_repository()
        self._select_after_listing = select
        self.details.show_repository(repo_id, self._facts(repo_id))
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
        self.jobs.run(lambda: suggest(memory(), n_ctx), then=self._on_suggestions_found,
                      error=lambda e: self.results_title.setText(f"No suggestions: {e}."))

    def show_message(self, text: str) -> None:
        """The status line's sentence ("" clears it); the line keeps its height either way."""
        self.message.setText(text)
        self.message.setToolTip(tooltip(text))
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

    def set_code_palette(self, palette: CodePalette) -> None:
        """The model card in a theme's colours (the window's theme changed)."""
        self.card.set_code_palette(palette)

    def close_jobs(self, timeout_ms: int = -1) -> bool:
        """Wait for running lookups (on quit); the download queue is closed by its owner."""
        return self.jobs.close(timeout_ms)

    # --- search and listing ----------------------------------------------------------------
    def _clear_repository(self) -> None:
        self._list_job += 1  # whatever the last repository still has on its way is dropped
        self.details.clear()
        self.listing, self.fits = None, {}
        self._on_files_selection_changed()

    def _on_suggestions_found(self, found: list[tuple[Suggestion, FitEstimate]]) -> None:
        self.suggestions = list(found)
        if self.searched:
            return  # a search's results are in view: the suggestions wait for an empty search
        self._show_suggestions()

    def _show_suggestions(self) -> None:
        self.result_cards.set_cards([suggestion_card(s, e) for s, e in self.suggestions])
        self.results_title.setText("Suggested for this machine's memory" if self.suggestions else
                                   "None of the suggested models fits this machine's free memory.")

    def _on_search_done(self, job: int, query: str, hits: list[RepoSummary], memory: MachineMemory) -> None:
        if job != self._search_job:
            return
        if not query and not hits:
            self.searched = False
            self._show_suggestions()
        else:
            self.result_cards.set_cards([result_card(h, memory) for h in hits])
            words = f"{len(hits)} models" + (f" match {query!r}" if query else "")
            self.results_title.setText(words if hits else "")
        self.show_message("" if hits else f"No GGUF repositories match {query!r}.")

    def _on_results_selection_changed(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        rows = selected.indexes()
        card = rows[0].data(CARD_ROLE) if rows else None
        if not isinstance(card, Card):
            return
        if isinstance(card.payload, Suggestion):
            self.open_repository(card.payload.repo_id, select=card.payload.filename)
        else:
            self.open_repository(card.key)

    def select_result(self, repo_id: str) -> None:
        """Select the card of `repo_id` (as a click does), which opens it."""
        row = self.result_cards.row_of(repo_id)
        if row >= 0:
            self.results.setCurrentIndex(self.result_cards.index(row))

    def _facts(self, repo_id: str) -> str:
        row = self.result_cards.row_of(repo_id)
        card = self.result_cards.cards[row] if row >= 0 else None
        hit = card.payload if card is not None else None
        if isinstance(hit, RepoSummary):
            facts = [f"{short_count(hit.downloads)} downloads", f"{short_count(hit.likes)} likes"]
            if hit.last_modified is not None:
                facts.append(f"updated {updated_words(hit.last_modified)}")
            return " · ".join(facts)
        if isinstance(hit, Suggestion):
            return hit.what
        return ""

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
        self.show_message(f"{m.name} is queued (see Downloads); it appears under On this machine when done.")

    def _on_queue_finished(self, e: object) -> None:
        name = getattr(getattr(e, "model", None), "name", "")
        if name and self.message.text().startswith(f"{name} is queued"):
            self.show_message(f"{name} is downloaded: it is listed under On this machine.")
        self.library_panel.refresh()

    def _on_queue_state_changed(self, _e: object) -> None:
        active = self.queue.active_count()
        self.section_buttons["downloads"].setText(f"Downloads · {active}" if active else "Downloads")
        self._show_markers()

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


def _status_line() -> QLabel:
    """The page's one status line: plain text, two lines high whether it says something or not, so
    a sentence never pushes the page down (a longer one is cut; its tooltip has it whole)."""
    line = plain_label()
    line.setObjectName("models-message")
    line.setWordWrap(True)
    font = line.font()
    font.setPixelSize(TYPE.small)
    line.setFont(font)
    line.setFixedHeight(2 * QFontMetrics(font).lineSpacing() + SPACE.xxs)
    line.setAlignment(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft)
    return line
