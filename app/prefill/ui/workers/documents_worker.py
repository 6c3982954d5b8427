"""The window's documents index: a QObject on its own thread that indexes, lists, shows and removes.

Indexing reads, cuts and embeds for seconds or minutes, so it runs here, never on the GUI thread; the GUI
asks through typed methods (each queues one private request signal) and hears back by signals. Progress
comes a few times a second (files, pages, passages, time left); Stop sets the job's `threading.Event`,
which the indexer checks after every batch of passages, so the file in hand is dropped and those before
it stay: the same folder attached again goes on where it stopped, unchanged files skipped by hash. A file
that cannot be read is listed in words (the reader's `DocumentError` sentence) and the others index.

The thread starts on the first request: a window that never touches a document starts none.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from prefill.documents.errors import CollectionNotFound, EmbedderMismatch, IndexUnavailable
from prefill.documents.index import CollectionSummary, FileRecord, default_index_path
from prefill.documents.indexer import IndexProgress
from prefill.documents.library import DocumentLibrary
from prefill.engine.errors import EngineError
from prefill.session.document_chats import (
    DocumentChats,
    DocumentsUnavailable,
    EmbedderLike,
    IndexJobs,
    SharedEmbedder,
    load_bundled_embedder,
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


@dataclass(frozen=True)
class CollectionView:
    """A collection as its view shows it: what it holds, and its files with their state."""

    summary: CollectionSummary
    files: tuple[FileRecord, ...]


class DocumentsWorker(QObject):
    """Owns the window's connection to the documents index; lives on the documents thread.

    Signals:
        progress(int, object): job id, IndexProgress (a few times a second, and after each file).
        indexed(int, object): job id, IndexDone.
        index_failed(int, str): job id, why the job could not run, in words (the index, the embedding model).
        collections(object): every collection, a list of CollectionSummary (`list_collections`).
        collection(str, object): a collection's CollectionView, or None when there is none of that name.
        removed(str): the collection was removed from the index.
        failed(str): a listing or a removal failed, in words.
    """

    progress = Signal(int, object)
    indexed = Signal(int, object)
    index_failed = Signal(int, str)
    collections = Signal(object)
    collection = Signal(str, object)
    removed = Signal(str)
    failed = Signal(str)

    _request_index = Signal(int, str, object)
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

    @Slot(int, str, object)
    def _on_request_index(self, job: int, collection: str, paths: list[Path]) -> None:
        cancel = self._cancels.get(job) or threading.Event()
        last = [0.0, -1]

        def tell(p: IndexProgress) -> None:
            now = time.monotonic()
            if p.files_done != last[1] or now - last[0] >= PROGRESS_EVERY_S:
                last[0], last[1] = now, p.files_done
                self.progress.emit(job, p)

        try:
            if cancel.is_set():
                self.indexed.emit(job, IndexDone(job, collection, True, 0, 0, 0, 0, 0, (), 0.0))
                return
            library = self._lib()
            present = [p for p in paths if p.exists()]
            missing = [f"{p}: there is no such file or folder any more." for p in paths if not p.exists()]
            report = library.add(collection, present, self.embedder, self.embedder.count_tokens, progress=tell,
                                 cancel=cancel)
            failed = {f.path: f.problem for f in library.files(collection) if f.state == "failed"}
            bad = [o for o in report.outcomes if o.state in ("failed", "skipped") and o.path in failed]
            self.indexed.emit(job, IndexDone(
                job, collection, report.cancelled, report.count("indexed"),
                report.count("skipped") - sum(o.state == "skipped" for o in bad),
                report.count("removed"), report.pages, report.chunks,
                tuple(missing) + tuple(failed[o.path] for o in bad), report.elapsed_s))
        except DocumentsUnavailable as e:
            self.index_failed.emit(job, str(e))
        except (IndexUnavailable, CollectionNotFound, EmbedderMismatch, sqlite3.Error) as e:
            self.index_failed.emit(job, f"The documents could not be indexed: {e}")
        except EngineError as e:
            self.index_failed.emit(job, f"The embedding model failed: {e}")
        finally:
            self._cancels.pop(job, None)
            self.jobs.ended(collection)

    @Slot()
    def _on_request_list(self) -> None:
        try:
            self.collections.emit(self._lib().collections())
        except (IndexUnavailable, sqlite3.Error) as e:
            self.failed.emit(f"The documents index could not be read: {e}")

    @Slot(str)
    def _on_request_read(self, name: str) -> None:
        try:
            library = self._lib()
            summary = next((c for c in library.collections() if c.name == name), None)
            self.collection.emit(name, None if summary is None else CollectionView(summary,
                                                                                   tuple(library.files(name))))
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
        load_embedder: Loads the embedding model on first use (the bundled one by default).
    """

    def __init__(self, history_path: Path, load_embedder: Callable[[], EmbedderLike] | None = None):
        self.index_path = default_index_path(history_path)
        self.embedder = SharedEmbedder(load_embedder or load_bundled_embedder)
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

    def stop(self, timeout_ms: int = 3000) -> bool:
        """Stop every job, close the index and the model, end the thread; wait at most `timeout_ms`."""
        if not self.thread.isRunning():
            self.embedder.close()  # loaded by a question's search, if at all
            return True
        self._worker.close()
        return bool(self.thread.wait(timeout_ms))
