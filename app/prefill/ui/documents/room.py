"""The documents room wires itself: the message box's Documents button, drops and pastes of files and
folders, the chat's chips, the indexing bar, the collections dialog, and the engine worker's questions.

What a chat reads (`ChatDocs`) is one of the chat's choices, kept with the conversation (`ChatChoices`
stores it; reopening the chat shows its chips again). Attaching indexes on the documents thread
(`DocumentsThread`), with progress here; asking goes through `ChatDocuments` on the engine thread (the
controller hands the question over, `EngineWorker.generate_with_documents`), exactly as the terminal asks.

Every collection is watched while the window runs (`FolderWatch`, from the start where the index exists):
a change under its folders has it looked at again, and what changed is indexed, with the bar shown only
when something did. The embedding model follows the setting `documents.embedding_model`
(`follow_settings`): a change re-indexes the collections indexed with another, with the bar.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMenu, QToolButton, QWidget

from prefill.documents.indexer import IndexProgress
from prefill.documents.readers import KNOWN_SUFFIXES
from prefill.session.document_chats import ChatDocs, unique_paths
from prefill.store.app_settings import Settings
from prefill.ui.chat.chat_choices import ChatChoices
from prefill.ui.chat.composer.document_chips import DocumentChips
from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.documents.collections_dialog import CollectionsDialog
from prefill.ui.documents.folder_watch import FolderWatch
from prefill.ui.documents.index_panel import IndexPanel
from prefill.ui.wiring.settings_changes import SettingsChanges
from prefill.ui.workers.documents_worker import DocumentsThread, IndexDone, shown_name
from prefill.ui.workers.engine_worker import EngineWorker

FILE_FILTER = "Documents (" + " ".join(f"*{s}" for s in sorted(KNOWN_SUFFIXES)) + ");;All files (*)"


class DocumentsRoom(QObject):
    """The chat's documents in the window.

    Args:
        documents: The documents thread (index jobs, collections, and the chats' side for the engine).
        choices: The open chat's choices: its documents are one.
        box: The message box (its Documents button, its drops and pastes, the chips above its text).
        panel: The indexing bar.
        engine: The engine worker: it asks the questions through the documents.
        notice: Says something in the window.
        window: The dialogs' parent.

    Signals:
        indexed(object): an index job ended (its IndexDone), after the bar showed it; a watched collection's
            refresh and a re-index with another embedding model too, when they changed something.
        index_failed(str): an index job could not run, and why (shown on the bar).
        removed(str): a collection was removed from the index.
        unchanged(str): a watched collection was looked at again and nothing had changed ("": the
            embedding model's change had nothing to re-index).
    """

    indexed = Signal(object)
    index_failed = Signal(str)
    removed = Signal(str)
    unchanged = Signal(str)

    def __init__(self, documents: DocumentsThread, choices: ChatChoices, box: InputBox, panel: IndexPanel,
                 engine: EngineWorker, notice: Callable[[str], None], window: QWidget):
        super().__init__(window)
        self.documents, self.choices, self.box, self.panel = documents, choices, box, panel
        self.notice, self.window = notice, window
        self.dialog: CollectionsDialog | None = None
        self.jobs: dict[int, str] = {}  # jobs running: their collection
        self.labels: dict[int, str] = {}  # what the bar calls each job running
        self.quiet: set[int] = set()  # of those, the ones nobody clicked for: the bar shows them once they work
        self.looks: set[int] = set()  # of those, the looks at a collection clicked for (Re-index): shown at once
        self.refreshing: set[str] = set()  # collections a refresh was asked for and has not answered
        self.last_done: IndexDone | None = None
        self._last_quiet_failure = ""
        self.chips = DocumentChips()
        box.add_strip(self.chips)
        self.button = QToolButton()
        self.button.setObjectName("documents-button")
        self.button.setText("Documents")
        self.button.setAccessibleName("Documents")
        self.button.setToolTip("Attach files or a folder to this chat, or read a collection (or drop them on the "
                               "window)")
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.button)
        self.attach_files_action = QAction("Attach files…", menu)
        self.attach_folder_action = QAction("Attach a folder…", menu)
        self.collections_action = QAction("Collections…", menu)
        for a in (self.attach_files_action, self.attach_folder_action, self.collections_action):
            menu.addAction(a)
        self.button.setMenu(menu)
        box.add_button(self.button)
        self.attach_files_action.triggered.connect(self.choose_files)
        self.attach_folder_action.triggered.connect(self.choose_folder)
        self.collections_action.triggered.connect(self.open_collections)
        box.documents_offered.connect(self.attach)
        choices.documents_changed.connect(self.chips.show_documents)
        self.chips.removed.connect(self.detach)
        self.watch = FolderWatch(self)
        self.watch.changed.connect(self.refresh)
        signals = documents.signals
        signals.progress.connect(self._on_worker_progress)
        signals.indexed.connect(self._on_worker_indexed)
        signals.index_failed.connect(self._on_worker_index_failed)
        signals.failed.connect(self._on_worker_failed)  # a method: run on this object's thread, the GUI's
        signals.removed.connect(self._on_worker_removed)
        signals.unchanged.connect(self._on_worker_unchanged)
        signals.watched.connect(self._on_worker_watched)
        panel.stop_requested.connect(self.stop)
        engine.use_documents(documents.chats)
        self._settings_followed = False
        self._looked_at_start = not documents.index_path.exists()  # a new index: nothing changed while closed
        self.stopped: set[str] = set()  # collections whose indexing was stopped: not looked at again by itself
        if documents.index_path.exists():  # collections made before: watched from the start
            documents.worker.watch_list()

    # --- the chat's own documents -----------------------------------------------------------------------
    def choose_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self.window, "Attach documents", str(Path.home()), FILE_FILTER)
        self.attach(paths)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self.window, "Attach a folder", str(Path.home()))
        if folder:
            self.attach([folder])

    def attach(self, paths: list[str]) -> None:
        """Give the open chat these files and folders (each once) and index them; a job stopped before
        goes on where it was, unchanged files skipped by their hash."""
        if not paths:
            return
        current = self.choices.documents
        if current is not None and current.shared:
            self.notice(f"This chat reads the collection {current.collection}: remove its chip to attach files "
                        "of the chat's own, or add a folder to the collection (Documents > Collections…).")
            return
        docs = current.adding(paths) if current is not None else ChatDocs.own(paths)
        self.choices.set_documents(docs)
        added = list(unique_paths(paths))
        names = [Path(p).name for p in added]
        self.index(docs.collection, added, ", ".join(names) if len(names) <= 3 else f"{len(names)} files and folders")

    def index(self, collection: str, paths: list[str], what: str) -> int:
        self.stopped.discard(collection)
        job = self.documents.worker.index(collection, [Path(p) for p in paths])
        self.jobs[job] = collection
        self.labels[job] = what
        self.panel.begin(job, what)
        return job

    def detach(self, key: str) -> None:
        """A chip's ×: that file or folder leaves the chat (and its passages the chat's own collection); a
        collection's chip: the chat stops reading it."""
        current = self.choices.documents
        if current is None:
            return
        if current.shared or key == current.collection:
            self.choices.set_documents(None)
            return
        left = current.without(key)
        if left.paths:  # queued after any job running, so what that job adds of it goes too
            self.documents.worker.forget(current.collection, [Path(key)])
            self.choices.set_documents(left)
        else:
            self._stop_jobs(current.collection)
            self.documents.worker.remove_collection(current.collection)
            self.choices.set_documents(None)

    # --- watched collections and the embedding model ------------------------------------------------
    def refresh(self, collection: str) -> int | None:
        """Look at a watched collection again: what changed is indexed (the bar shows it), what is gone
        deleted; nothing is read when nothing changed. None when a look at it is already on its way, or its
        indexing was stopped (Stop holds until it is indexed again, or the next start)."""
        if collection in self.refreshing or collection in self.stopped:
            return None
        job = self._look(collection)
        self.quiet.add(job)
        return job

    def reindex(self, collection: str) -> int | None:
        """Re-index, clicked in the collections: look at the collection's folders again now, with the bar from
        the start (changed and new files indexed, files gone deleted; the bar says when nothing changed). It
        goes on with a collection whose indexing was stopped. None when a look at it is already on its way."""
        self.stopped.discard(collection)
        if collection in self.refreshing:
            return None
        job = self._look(collection)
        self.looks.add(job)
        self.panel.begin(job, self.labels[job])
        return job

    def _look(self, collection: str) -> int:
        """Ask the worker to look at `collection`'s folders again; the job, labelled for the bar."""
        self.refreshing.add(collection)
        job = self.documents.worker.refresh(collection)
        self.jobs[job] = collection
        self.labels[job] = f"changes in {shown_name(collection)}"
        return job

    def _on_worker_watched(self, paths: dict[str, tuple[str, ...]]) -> None:
        self.watch.follow(paths)
        if not self._looked_at_start:  # what changed while the app was closed
            self._looked_at_start = True
            for name in sorted(paths):
                self.refresh(name)

    def follow_settings(self, changes: SettingsChanges) -> None:
        """Index and search with the embedding model the settings name, now and on each change."""
        changes.subscribe("documents.embedding_model", self._on_settings_changed, now=True)

    def _on_settings_changed(self, new: Settings, _old: Settings) -> None:
        self.use_embedding_model(new.documents.embedding_model)

    def use_embedding_model(self, path: str) -> int | None:
        """Index and search with this embedding GGUF ("" = the bundled model) from now on; the collections
        indexed with another are indexed again (the bar shows it). The first call, at start, takes the model
        as saved and re-indexes nothing (a collection `prefill docs add` made with another model is left as it
        is; one whose re-index was stopped by quitting is made the new model's already, and the first look at
        the watched collections goes on with it). Returns the job's id (None: nothing asked)."""
        first = not self._settings_followed
        self._settings_followed = True
        job = self.documents.use_embedding_model(path, reindex=not first)
        if job is not None:
            self.jobs[job] = ""
            self.labels[job] = f"the collections with {Path(path).name if path else 'the bundled embedding model'}"
            self.quiet.add(job)
        return job

    def stop(self) -> None:
        """Stop indexing (every job) after the batch in hand; what is done is kept."""
        self.panel.stopping()
        self.documents.worker.stop()

    def _stop_jobs(self, collection: str) -> None:
        for job, name in self.jobs.items():
            if name == collection:
                self.documents.worker.stop(job)

    def _show(self, job: int) -> None:
        """The bar follows the job the documents thread works on (one at a time, in the order asked): a look
        nobody clicked for is shown once it finds work, and the job clicked for next takes the bar back."""
        if self.panel.job != job:
            self.panel.begin(job, self.labels.get(job, "documents"))

    def _on_worker_progress(self, job: int, p: IndexProgress) -> None:
        self._show(job)
        self.panel.on_progress(job, p)

    def _end_job(self, job: int) -> None:
        collection = self.jobs.pop(job, None)
        self.labels.pop(job, None)
        if job in self.quiet or job in self.looks:
            self.quiet.discard(job)
            self.looks.discard(job)
            if collection:
                self.refreshing.discard(collection)

    def _on_worker_indexed(self, job: int, done: IndexDone) -> None:
        self._show(job)
        self._end_job(job)
        if done.cancelled:
            self.stopped.update(done.reindexed or (done.collection,))
        self.last_done = done
        self.panel.on_done(job, done)
        if self.dialog is not None:
            self.dialog.refresh()
        self.documents.worker.watch_list()  # new folders and files are watched too
        self.indexed.emit(done)

    def _on_worker_unchanged(self, job: int, collection: str) -> None:
        if job in self.looks:  # clicked for: the bar says so
            self.panel.on_unchanged(job, f"Nothing changed in {shown_name(collection)} since it was indexed.")
        self._end_job(job)
        self.unchanged.emit(collection)

    def _on_worker_index_failed(self, job: int, why: str) -> None:
        quiet = job in self.quiet
        if not quiet or why != self._last_quiet_failure:  # a look nobody clicked for says a fault once
            self._show(job)
            self.panel.on_failed(job, why)
        if quiet:
            self._last_quiet_failure = why
        self._end_job(job)
        self.index_failed.emit(why)

    def _on_worker_failed(self, text: str) -> None:
        self.notice(text)

    def _on_worker_removed(self, name: str) -> None:
        self.documents.worker.watch_list()  # its folders are no longer watched
        current = self.choices.documents
        if current is not None and current.shared and current.collection == name:
            self.choices.set_documents(None)  # its collection is gone: the chat reads nothing now
        self.removed.emit(name)

    @property
    def indexing(self) -> bool:
        return bool(self.jobs)

    # --- collections -------------------------------------------------------------------------------------
    def open_collections(self) -> CollectionsDialog:
        """The collections dialog (one, kept): their sizes, folders, files and embedding model; add a folder,
        re-index, remove."""
        if self.dialog is None:
            self.dialog = CollectionsDialog(self.documents.worker, self.window)
            self.dialog.use_requested.connect(self.use_collection)
            self.dialog.index_requested.connect(self.index_collection)
            self.dialog.reindex_requested.connect(self.reindex)
            self.dialog.notice.connect(self.notice)
        self.dialog.refresh()
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def use_collection(self, name: str) -> None:
        """The open chat reads collection `name` (in place of any files of its own)."""
        if not name:
            return
        current = self.choices.documents
        if current is not None and not current.shared and current.paths:
            self.notice(f"This chat now reads the collection {name} in place of its own documents.")
        self.choices.set_documents(ChatDocs.named(name))

    def index_collection(self, name: str, folder: str) -> None:
        """Index `folder` into collection `name` (made when missing); a chat without documents reads it."""
        self.index(name, [folder], f"{Path(folder).name} into {name}")
        if self.choices.documents is None:
            self.choices.set_documents(ChatDocs.named(name))

    def close(self, timeout_ms: int = 3000) -> bool:
        """Stop watching and indexing, close the index and the embedding model (on quit)."""
        self.watch.stop()
        return self.documents.stop(timeout_ms)
