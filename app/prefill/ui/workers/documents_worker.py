"""The window's documents index: a QObject on its own thread that indexes, lists, shows and removes.

Indexing reads, cuts and embeds for seconds or minutes, so it runs here, never on the GUI thread; the GUI
asks through typed methods (each queues one private request signal) and hears back by signals. Progress
comes a few times a second (files, pages, passages, time left); Stop sets the job's `threading.Event`,
which the indexer checks after every batch of passages, so the file in hand is dropped and those before
it stay: the same folder attached again goes on where it stopped, unchanged files skipped by hash. A file
that cannot be read is listed in words (the reader's `DocumentError` sentence) and the others index.

Watched collections: `watch_list` says which folders and files each collection was made from (for the
room's file watcher), and `refresh` looks at one again, indexing what changed (nothing is read when nothing
did: `unchanged`). `use_embedder` puts another embedding model in place and re-indexes the collections
indexed with another, as one job with its progress.

The thread starts on the first request: a window that never touches a document starts none.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from prefill.documents.errors import CollectionNotFound, EmbedderMismatch, IndexUnavailable
from prefill.documents.index import CollectionSummary, FileRecord, default_index_path
from prefill.documents.indexer import IndexProgress, IndexReport
from prefill.documents.library import DocumentLibrary
from prefill.engine.errors import EngineError
from prefill.session.document_chats import (
    DocumentChats,
    DocumentsUnavailable,
    EmbedderLike,
    IndexJobs,
    SharedEmbedder,
    bundled_embedder_id,
    load_bundled_embedder,
    load_embedder_file,
)

PROGRESS_EVERY_S = 0.1  # a progress signal at most this often (and at each file's end)


@dataclass(frozen=True)
class IndexDone:
    """What an index job did.

    Attributes:
        job: The id `index` returned.
        collection: The collection it indexed into.
        cancelled: Stop came before the end (the files done are kept).
        indexed, unchanged, removed: Files read now, skipped as unchanged, dropped (gone from their folder).
        pages, chunks: Pages read and passages stored now.
        problems: Each file that could not be read, in words (those that failed before and are unchanged too).
        elapsed_s: How long it ran.
        title: What the job was, where it was not asked by a click (a watched collection's changes, the
            collections re-indexed with another embedding model); "" for an index job.
        reindexed: The collections made another embedding model's (`use_embedder`): all read again, or,
            stopped, the rest at the next look.
    """

    job: int
    collection: str
    cancelled: bool
    indexed: int
    unchanged: int
    removed: int
    pages: int
    chunks: int
    problems: tuple[str, ...]
    elapsed_s: float
    title: str = ""
    reindexed: tuple[str, ...] = ()


@dataclass(frozen=True)
class CollectionView:
    """A collection as its view shows it: what it holds, its files with their state, and the files and
    folders it was made from (watched while the window runs)."""

    summary: CollectionSummary
    files: tuple[FileRecord, ...]
    roots: tuple[str, ...] = ()


@dataclass(frozen=True)
class CollectionEntry:
    """A collection as the list of collections shows it: what it holds, and the files and folders it was
    made from (its files are read only for the one chosen, `read_collection`)."""

    summary: CollectionSummary
    roots: tuple[str, ...] = ()


def shown_name(collection: str) -> str:
    """A collection as a person reads it: a chat's own is "this chat's documents"."""
    from prefill.session.document_chats import OWN_PREFIX

    return "the chat's documents" if collection.startswith(OWN_PREFIX) else collection


class DocumentsWorker(QObject):
    """Owns the window's connection to the documents index; lives on the documents thread.

    Signals:
        progress(int, object): job id, IndexProgress (a few times a second, and after each file).
        indexed(int, object): job id, IndexDone.
        index_failed(int, str): job id, why the job could not run, in words (the index, the embedding model).
        collections(object): every collection, a list of CollectionEntry (`list_collections`).
        collection(str, object): a collection's CollectionView, or None when there is none of that name.
        removed(str): the collection was removed from the index.
        failed(str): a listing or a removal failed, in words.
        unchanged(int, str): job id, collection: a `refresh` found nothing changed (or a `use_embedder`
            nothing to re-index: the collection is ""); nothing was read.
        watched(object): what to watch, a dict of collection name to the paths (folders, then files) it was
            made from (`watch_list`).
    """

    progress = Signal(int, object)
    indexed = Signal(int, object)
    index_failed = Signal(int, str)
    collections = Signal(object)
    collection = Signal(str, object)
    removed = Signal(str)
    failed = Signal(str)
    unchanged = Signal(int, str)
    watched = Signal(object)

    _request_index = Signal(int, str, object)
    _request_refresh = Signal(int, str)
    _request_reembed = Signal(int, object)
    _request_watch = Signal()
    _request_list = Signal()
    _request_read = Signal(str)
    _request_remove = Signal(str)
    _request_forget = Signal(str, object)
    _request_close = Signal()

    def __init__(self, index_path: Path, embedder: SharedEmbedder, jobs: IndexJobs):
        super().__init__()
        self.index_path = index_path
        self.embedder = embedder
        self.jobs = jobs
        self._library: DocumentLibrary | None = None
        self._ids = itertools.count(1)
        self._cancels: dict[int, threading.Event] = {}  # written by the GUI thread, read by this one
        self._request_index.connect(self._on_request_index)
        self._request_refresh.connect(self._on_request_refresh)
        self._request_reembed.connect(self._on_request_reembed)
        self._request_watch.connect(self._on_request_watch)
        self._request_list.connect(self._on_request_list)
        self._request_read.connect(self._on_request_read)
        self._request_remove.connect(self._on_request_remove)
        self._request_forget.connect(self._on_request_forget)
        self._request_close.connect(self._on_request_close)

    # --- requests, from the GUI thread ------------------------------------------------------
    def index(self, collection: str, paths: list[Path]) -> int:
        """Index files and folders into `collection` (made when missing); returns the job's id."""
        job = next(self._ids)
        self._cancels[job] = threading.Event()
        self.jobs.began(collection)  # before it is queued: a question asked meanwhile waits for it
        self._request_index.emit(job, collection, list(paths))
        return job

    def refresh(self, collection: str) -> int:
        """Look at a watched collection again: changed and new files indexed, files gone deleted, unchanged
        ones skipped (`unchanged` when nothing changed); returns the job's id."""
        job = next(self._ids)
        self._cancels[job] = threading.Event()
        self.jobs.began(collection)
        self._request_refresh.emit(job, collection)
        return job

    def use_embedder(self, load: Callable[[], EmbedderLike] | None, model_id: str | None = None) -> int:
        """Index and search with the model `load` loads from now on (None: the one in place; `model_id`: its
        id where known before loading), and re-index, as one job, every collection indexed with another.
        Questions wait until the collections to re-index are known, and then for theirs."""
        job = next(self._ids)
        self._cancels[job] = threading.Event()
        self.jobs.began_all()
        self._request_reembed.emit(job, (load, model_id))
        return job

    def watch_list(self) -> None:
        """Ask what to watch (`watched`)."""
        self._request_watch.emit()

    def stop(self, job: int | None = None) -> None:
        """Stop a job (None: every job) after the batch in hand; never blocks."""
        for j, cancel in list(self._cancels.items()):
            if job is None or j == job:
                cancel.set()

    def list_collections(self) -> None:
        self._request_list.emit()

    def read_collection(self, name: str) -> None:
        self._request_read.emit(name)

    def remove_collection(self, name: str) -> None:
        self._request_remove.emit(name)

    def forget(self, collection: str, paths: list[Path]) -> None:
        """Drop these files and folders from a collection (a chat's document detached)."""
        self._request_forget.emit(collection, list(paths))

    def close(self) -> None:
        """The last request: stop every job, close the index and free the embedding model."""
        self.stop()
        self._request_close.emit()

    # --- slots, on the documents thread -------------------------------------------------------
    def _lib(self) -> DocumentLibrary:
        if self._library is None:
            self._library = DocumentLibrary(self.index_path)
        return self._library

    def _teller(self, job: int) -> Callable[[IndexProgress], None]:
        last = [0.0, -1]

        def tell(p: IndexProgress) -> None:
            now = time.monotonic()
            if p.files_done != last[1] or now - last[0] >= PROGRESS_EVERY_S:
                last[0], last[1] = now, p.files_done
                self.progress.emit(job, p)
        return tell

    def _done(self, job: int, collection: str, reports: list[IndexReport], missing: Sequence[str] = (),
              title: str = "", reindexed: tuple[str, ...] = ()) -> IndexDone:
        """What the job did, from its reports (one a collection), the files that could not be read included."""
        library = self._lib()
        problems = list(missing)
        indexed = unchanged = removed = pages = chunks = 0
        cancelled = False
        elapsed = 0.0
        for name, report in zip(list(reindexed) or [collection], reports):
            failed = {f.path: f.problem for f in library.files(name) if f.state == "failed"}
            bad = [o for o in report.outcomes if o.state in ("failed", "skipped") and o.path in failed]
            problems += [failed[o.path] for o in bad]
            indexed += report.count("indexed")
            unchanged += report.count("skipped") - sum(o.state == "skipped" for o in bad)
            removed += report.count("removed")
            pages, chunks = pages + report.pages, chunks + report.chunks
            cancelled = cancelled or report.cancelled
            elapsed += report.elapsed_s
        return IndexDone(job, collection, cancelled, indexed, unchanged, removed, pages, chunks, tuple(problems),
                         elapsed, title, reindexed)

    def _failed(self, job: int, e: Exception) -> None:
        if isinstance(e, DocumentsUnavailable):
            self.index_failed.emit(job, str(e))
        elif isinstance(e, EngineError):
            self.index_failed.emit(job, f"The embedding model failed: {e}")
        else:
            self.index_failed.emit(job, f"The documents could not be indexed: {e}")

    @Slot(int, str, object)
    def _on_request_index(self, job: int, collection: str, paths: list[Path]) -> None:
        cancel = self._cancels.get(job) or threading.Event()
        try:
            if cancel.is_set():
                self.indexed.emit(job, IndexDone(job, collection, True, 0, 0, 0, 0, 0, (), 0.0))
                return
            library = self._lib()
            present = [p for p in paths if p.exists()]
            missing = [f"{p}: there is no such file or folder any more." for p in paths if not p.exists()]
            report = library.add(collection, present, self.embedder, self.embedder.count_tokens,
                                 progress=self._teller(job), cancel=cancel)
            self.indexed.emit(job, self._done(job, collection, [report], missing))
        except (DocumentsUnavailable, IndexUnavailable, CollectionNotFound, EmbedderMismatch, sqlite3.Error,
                EngineError) as e:
            self._failed(job, e)
        finally:
            self._cancels.pop(job, None)
            self.jobs.ended(collection)

    @Slot(int, str)
    def _on_request_refresh(self, job: int, collection: str) -> None:
        cancel = self._cancels.get(job) or threading.Event()
        try:
            library = self._lib()
            if cancel.is_set() or not library.changes(collection):
                self.unchanged.emit(job, collection)
                return
            report = library.refresh(collection, self.embedder, self.embedder.count_tokens,
                                     progress=self._teller(job), cancel=cancel)
            self.indexed.emit(job, self._done(job, collection, [report], title=f"{shown_name(collection)} changed"))
        except CollectionNotFound:
            self.unchanged.emit(job, collection)  # removed meanwhile: nothing to watch
        except (DocumentsUnavailable, IndexUnavailable, EmbedderMismatch, sqlite3.Error, EngineError) as e:
            self._failed(job, e)
        finally:
            self._cancels.pop(job, None)
            self.jobs.ended(collection)

    @Slot(int, object)
    def _on_request_reembed(self, job: int, choice: tuple[Callable[[], EmbedderLike] | None, str | None]) -> None:
        cancel = self._cancels.get(job) or threading.Event()
        stale: list[str] = []
        held: set[str] = set()
        try:
            try:
                load, model_id = choice
                if load is not None:
                    self.embedder.switch(load, model_id)
                library = self._lib()
                indexed = [c for c in library.collections() if c.model_id and c.files]
                want = self.embedder.expected_id if indexed else ""
                stale = [c.name for c in indexed if c.model_id != want]
                for name in stale:
                    self.jobs.began(name)
                    held.add(name)
            finally:
                self.jobs.ended_all()
            if not stale:
                self.unchanged.emit(job, "")
                return
            for name in stale:  # all made the new model's first: stopped, or quit, the next look goes on
                library.switch_model(name, self.embedder)
            tell = self._teller(job)
            reports: list[IndexReport] = []
            for name in stale:
                if cancel.is_set():
                    break
                reports.append(library.refresh(name, self.embedder, self.embedder.count_tokens, progress=tell,
                                               cancel=cancel))
                self.jobs.ended(name)
                held.discard(name)
            done = self._done(job, stale[0], reports, title=f"Re-indexed with {self.embedder.model_id}",
                              reindexed=tuple(stale))
            if len(reports) < len(stale):
                done = replace(done, cancelled=True)
            self.indexed.emit(job, done)
        except (DocumentsUnavailable, IndexUnavailable, CollectionNotFound, EmbedderMismatch, sqlite3.Error,
                EngineError) as e:
            self._failed(job, e)
        finally:
            for name in held:
                self.jobs.ended(name)
            self._cancels.pop(job, None)

    @Slot()
    def _on_request_watch(self) -> None:
        try:
            library = self._lib()
            found = {}
            for c in library.collections():
                paths = library.watch_paths(c.name)
                if paths:
                    found[c.name] = tuple(paths)
            self.watched.emit(found)
        except (IndexUnavailable, sqlite3.Error) as e:
            self.failed.emit(f"The documents index could not be read: {e}")

    @Slot()
    def _on_request_list(self) -> None:
        try:
            library = self._lib()
            self.collections.emit([CollectionEntry(c, tuple(str(r) for r in library.roots(c.name)))
                                   for c in library.collections()])
        except (IndexUnavailable, sqlite3.Error) as e:
            self.failed.emit(f"The documents index could not be read: {e}")

    @Slot(str)
    def _on_request_read(self, name: str) -> None:
        try:
            library = self._lib()
            summary = next((c for c in library.collections() if c.name == name), None)
            self.collection.emit(name, None if summary is None else CollectionView(
                summary, tuple(library.files(name)), tuple(str(r) for r in library.roots(name))))
        except CollectionNotFound:
            self.collection.emit(name, None)
        except (IndexUnavailable, sqlite3.Error) as e:
            self.failed.emit(f"The documents index could not be read: {e}")

    @Slot(str)
    def _on_request_remove(self, name: str) -> None:
        try:
            self._lib().remove(name)
        except CollectionNotFound:
            pass  # gone already: what was asked is so
        except (IndexUnavailable, sqlite3.Error) as e:
            self.failed.emit(f"The collection could not be removed: {e}")
            return
        self.removed.emit(name)
        self._on_request_list()

    @Slot(str, object)
    def _on_request_forget(self, collection: str, paths: list[Path]) -> None:
        try:
            self._lib().forget(collection, paths)
        except CollectionNotFound:
            pass  # never indexed: nothing to drop
        except (IndexUnavailable, sqlite3.Error) as e:
            self.failed.emit(f"The documents index could not be changed: {e}")

    @Slot()
    def _on_request_close(self) -> None:
        if self._library is not None:
            self._library.close()
            self._library = None
        self.embedder.close()
        QThread.currentThread().quit()


class DocumentsThread:
    """The documents worker on its own thread (started on first use), and what the engine thread shares
    with it: the embedding model, the jobs running, and `chats` (the questions' side, for `EngineWorker`).

    Args:
        history_path: The history file; the index is `documents.sqlite3` beside it.
        load_embedder: Loads the default embedding model on first use (the bundled one by default).
        load_file: Loads an embedding GGUF the setting `documents.embedding_model` names (a test's may
            stand in; its model's id must be the file's name, as a GGUF's is).
    """

    def __init__(self, history_path: Path, load_embedder: Callable[[], EmbedderLike] | None = None,
                 load_file: Callable[[str], EmbedderLike] | None = None):
        self.index_path = default_index_path(history_path)
        self._load_default = load_embedder or load_bundled_embedder
        self._default_id = None if load_embedder is not None else bundled_embedder_id()
        self._load_file = load_file or load_embedder_file
        self.embedding_model = ""  # the setting in force: "" = the default model
        self.embedder = SharedEmbedder(self._load_default, self._default_id)
        self.jobs = IndexJobs()
        self.chats = DocumentChats(self.index_path, self.embedder, self.jobs)
        self.thread = QThread()
        self.thread.setObjectName("prefill-documents")
        self._worker = DocumentsWorker(self.index_path, self.embedder, self.jobs)
        self._worker.moveToThread(self.thread)

    @property
    def worker(self) -> DocumentsWorker:
        """The worker, its thread started (the first call starts it)."""
        if not self.thread.isRunning() and not self.thread.isFinished():
            self.thread.start()
        return self._worker

    @property
    def signals(self) -> DocumentsWorker:
        """The worker to connect to, without starting its thread."""
        return self._worker

    def use_embedding_model(self, path: str, reindex: bool = True) -> int | None:
        """Index and search with the embedding GGUF at `path` from now on ("" = the default model): a job
        re-indexes the collections indexed with another (its id; None when `path` is the model in place).
        Not `reindex` (at start, the setting as saved): the model is only put in place, here (nothing is
        loaded yet), and the collections stay as they are. The documents thread loads the model."""
        path = path.strip()
        if path == self.embedding_model:
            return None
        self.embedding_model = path
        load: Callable[[], EmbedderLike]
        model_id: str | None
        if path:
            load_file = self._load_file
            load, model_id = (lambda: load_file(path)), Path(path).name
        else:
            load, model_id = self._load_default, self._default_id
        if not reindex:
            self.embedder.switch(load, model_id)
            return None
        return self.worker.use_embedder(load, model_id)

    def stop(self, timeout_ms: int = 3000) -> bool:
        """Stop every job, close the index and the model, end the thread; wait at most `timeout_ms`."""
        if not self.thread.isRunning():
            self.embedder.close()  # loaded by a question's search, if at all
            return True
        self._worker.close()
        return bool(self.thread.wait(timeout_ms))
