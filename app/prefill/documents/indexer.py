"""Indexing as a resumable job: read, cut, embed and store file after file, one transaction a file.

A file whose content hash is unchanged since it was last indexed (or last failed) is skipped, so a job
stopped (Stop, a crash, `kill -9`) and started again goes on where it was, without a passage twice: a
file is in the index whole, with its passages and vectors, or not at all. A file that cannot be read is
stored as failed, with the sentence that says why, and the job goes on with the next. A collection whose
embedding model is not the one given is emptied first (its vectors mean nothing to another model).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from prefill.documents.chunking import Chunk, ChunkSizes, CountTokens, chunk_document
from prefill.documents.errors import DocumentError, EmbedderMismatch
from prefill.documents.index import (
    Collection,
    ensure_collection,
    file_record,
    forget_file,
    list_files,
    set_model,
)
from prefill.documents.readers import KNOWN_SUFFIXES, ReadLimits, check_file, read_document
from prefill.documents.vectors import to_blob
from prefill.store.transaction import transaction


class Embedder(Protocol):
    """What turns passages into vectors (the bundled embedding model, another GGUF, or a test's)."""

    @property
    def model_id(self) -> str:
        """Names the model: a collection indexed with another is indexed again."""
        ...

    @property
    def n_embd(self) -> int:
        """How many numbers a vector has."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


@dataclass(frozen=True)
class IndexProgress:
    """Where a job stands: sent after each file is read, each batch embedded and each file stored.

    Attributes:
        files_done, files_total: Files dealt with (indexed, skipped or failed) and to deal with.
        pages, chunks: Pages read and passages stored so far (this run).
        skipped, failed: Files unchanged since last time, and files that could not be read.
        elapsed_s: Seconds since the job began.
        eta_s: Seconds left, estimated from the bytes read so far (None until there is a rate).
        current: The file being read.
    """

    files_done: int
    files_total: int
    pages: int
    chunks: int
    skipped: int
    failed: int
    elapsed_s: float
    eta_s: float | None
    current: str


FileState = Literal["indexed", "skipped", "failed", "removed"]


@dataclass(frozen=True)
class FileOutcome:
    path: str
    state: FileState
    problem: str = ""
    pages: int = 0
    chunks: int = 0


@dataclass
class IndexReport:
    """What a job did, file by file; `cancelled` when Stop came before the end."""

    outcomes: list[FileOutcome] = field(default_factory=list)
    cancelled: bool = False
    elapsed_s: float = 0.0

    def count(self, state: FileState) -> int:
        return sum(o.state == state for o in self.outcomes)

    @property
    def pages(self) -> int:
        return sum(o.pages for o in self.outcomes)

    @property
    def chunks(self) -> int:
        return sum(o.chunks for o in self.outcomes)


def gather(paths: Iterable[Path]) -> list[Path]:
    """The files to index: each file named, and every file of a known kind under each folder named
    (hidden files and folders left out; links to folders not followed), each once, sorted."""
    found: dict[str, Path] = {}
    for p in paths:
        p = p.expanduser().resolve()
        if p.is_dir():
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in files:
                    f = Path(root) / name
                    if not name.startswith(".") and f.suffix.lower() in KNOWN_SUFFIXES and f.is_file():
                        found[str(f)] = f
        else:
            found[str(p)] = p
    return [found[k] for k in sorted(found)]


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while piece := f.read(1 << 20):
            h.update(piece)
    return h.hexdigest()


@dataclass
class _Tally:
    total: int
    bytes_total: int
    began: float = field(default_factory=time.monotonic)
    done: int = 0
    pages: int = 0
    chunks: int = 0
    skipped: int = 0
    failed: int = 0
    bytes_done: int = 0
    bytes_read: int = 0
    read_s: float = 0.0

    def snapshot(self, current: str) -> IndexProgress:
        elapsed = time.monotonic() - self.began
        eta = None
        if self.bytes_read and self.read_s > 0:
            eta = (self.bytes_total - self.bytes_done) * self.read_s / self.bytes_read
        return IndexProgress(self.done, self.total, self.pages, self.chunks, self.skipped, self.failed,
                             elapsed, eta, current)


def index_files(conn: sqlite3.Connection, collection_name: str, paths: Sequence[Path], embedder: Embedder,
                count_tokens: CountTokens, *, sizes: ChunkSizes = ChunkSizes(), limits: ReadLimits = ReadLimits(),
                progress: Callable[[IndexProgress], None] | None = None, cancel: threading.Event | None = None,
                batch: int = 32, force: bool = False, prune: bool = True) -> IndexReport:
    """Index `paths` (files and folders) into the collection, making it when missing.

    Args:
        conn: The index (`index.open_index`), used from this thread only while the job runs.
        collection_name: The collection's name.
        paths: Files and folders (see `gather`).
        embedder: The embedding model; a collection indexed with another is emptied first.
        count_tokens: Counts tokens as the embedding model does, to size the passages.
        sizes, limits: Passage sizes; what a reader refuses.
        progress: Called on this thread as the job goes (see `IndexProgress`).
        cancel: Set to stop: the file in hand is not stored, those before it stay.
        batch: Passages embedded at once.
        force: Read every file again, changed or not.
        prune: Drop the collection's files that are no longer under the folders named.

    Raises:
        EmbedderMismatch: The embedder's vectors are not `n_embd` long (nothing of that file is stored).
        IndexUnavailable, sqlite3.Error: The index cannot be written.
    """
    cancel = cancel or threading.Event()
    report = IndexReport()
    collection = ensure_collection(conn, collection_name)
    if collection.model_id != embedder.model_id or collection.n_embd != embedder.n_embd:
        collection = set_model(conn, collection, embedder.model_id, embedder.n_embd)
    files = gather(paths)
    sizes_of = {str(f): _size(f) for f in files}
    tally = _Tally(len(files), sum(sizes_of.values()))
    began = time.monotonic()

    def tell(current: str) -> None:
        if progress is not None:
            progress(tally.snapshot(current))

    for f in files:
        if cancel.is_set():
            report.cancelled = True
            break
        key = str(f)
        outcome = _index_one(conn, collection, f, embedder, count_tokens, sizes, limits, cancel, batch, force,
                             tally, tell)
        if outcome is None:
            report.cancelled = True
            break
        report.outcomes.append(outcome)
        tally.done += 1
        tally.bytes_done += sizes_of[key]
        tally.skipped += outcome.state == "skipped"
        tally.failed += outcome.state == "failed"
        tell(key)
    if prune and not report.cancelled:
        folders = [str(p.expanduser().resolve()) + os.sep for p in paths if p.expanduser().is_dir()]
        listed = {str(f) for f in files}
        for rec in list_files(conn, collection):
            if rec.path not in listed and any(rec.path.startswith(d) for d in folders):
                forget_file(conn, collection, rec.path)
                report.outcomes.append(FileOutcome(rec.path, "removed"))
    report.elapsed_s = time.monotonic() - began
    return report


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _index_one(conn: sqlite3.Connection, collection: Collection, path: Path, embedder: Embedder,
               count_tokens: CountTokens, sizes: ChunkSizes, limits: ReadLimits, cancel: threading.Event,
               batch: int, force: bool, tally: _Tally, tell: Callable[[str], None]) -> FileOutcome | None:
    """One file read, cut, embedded and stored in one transaction; None when cancelled on the way."""
    key = str(path)
    tell(key)
    old = file_record(conn, collection, key)
    try:
        check_file(path, limits)  # refused before hashing: a pipe would be read for ever, a huge file for long
    except DocumentError as exc:
        size, mtime = _size(path), _mtime(path)
        if old is not None and not force and (old.sha256, old.size, old.mtime) == ("", size, mtime):
            return FileOutcome(key, "skipped", old.problem)
        _store(conn, collection, key, "", size, mtime, "failed", str(exc), "", 0, [], [])
        return FileOutcome(key, "failed", str(exc))
    try:
        st = path.stat()
        digest = file_hash(path)
    except OSError as exc:
        problem = f"{path.name}: cannot be read: {exc.strerror or exc}"
        _store(conn, collection, key, "", 0, 0.0, "failed", problem, "", 0, [], [])
        return FileOutcome(key, "failed", problem)
    if old is not None and old.sha256 == digest and not force:
        if (old.size, old.mtime) != (st.st_size, st.st_mtime):  # touched, not changed: `watch` sees it as it is
            conn.execute("UPDATE files SET size = ?, mtime = ? WHERE collection_id = ? AND path = ?",
                         (st.st_size, st.st_mtime, collection.id, key))
        return FileOutcome(key, "skipped", old.problem, old.pages, old.chunks)
    t0 = time.monotonic()
    try:
        doc = read_document(path, limits)
    except DocumentError as exc:
        _store(conn, collection, key, digest, st.st_size, st.st_mtime, "failed", str(exc), "", 0, [], [])
        return FileOutcome(key, "failed", str(exc))
    chunks = chunk_document(doc, count_tokens, sizes)
    tally.pages += doc.pages
    tell(key)
    vectors: list[bytes] = []
    for i in range(0, len(chunks), batch):
        if cancel.is_set():
            tally.pages -= doc.pages
            return None
        part = chunks[i:i + batch]
        try:
            got = embedder.embed([embedding_text(c) for c in part])
        except EmbedderMismatch:
            raise
        except Exception as exc:  # the model refused this file's text: the file fails, in words, the job goes on
            problem = f"{path.name}: the embedding model could not read it: {exc}"
            _store(conn, collection, key, digest, st.st_size, st.st_mtime, "failed", problem, doc.kind,
                   doc.pages, [], [])
            return FileOutcome(key, "failed", problem, doc.pages)
        if len(got) != len(part):
            raise EmbedderMismatch(embedder.n_embd, 0)
        vectors.extend(to_blob(v, collection.n_embd) for v in got)
        tally.chunks += len(part)
        tell(key)
    if cancel.is_set():
        tally.chunks -= len(chunks)
        tally.pages -= doc.pages
        return None
    problem = "; ".join(doc.notes)
    _store(conn, collection, key, digest, st.st_size, st.st_mtime, "indexed", problem, doc.kind, doc.pages, chunks,
           vectors)
    tally.bytes_read += st.st_size
    tally.read_s += time.monotonic() - t0
    return FileOutcome(key, "indexed", problem, doc.pages, len(chunks))


def embedding_text(chunk: Chunk) -> str:
    """What is embedded for a passage: its heading path, then its text (a passage under "Billing" about
    "the fee" is found by a question about billing fees)."""
    return (" > ".join(chunk.heading) + "\n" + chunk.text) if chunk.heading else chunk.text


def _store(conn: sqlite3.Connection, collection: Collection, path: str, digest: str, size: int, mtime: float,
           state: str, problem: str, kind: str, pages: int, chunks: list[Chunk], vectors: list[bytes]) -> None:
    with transaction(conn):
        conn.execute("""DELETE FROM vectors WHERE chunk_id IN (SELECT c.id FROM chunks c JOIN files f
                        ON f.id = c.file_id WHERE f.collection_id = ? AND f.path = ?)""", (collection.id, path))
        conn.execute("""DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE collection_id = ?
                        AND path = ?)""", (collection.id, path))
        conn.execute("""
            INSERT INTO files(collection_id, path, sha256, size, mtime, state, problem, kind, pages, chunks,
                              indexed_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(collection_id, path) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
                mtime = excluded.mtime, state = excluded.state, problem = excluded.problem, kind = excluded.kind,
                pages = excluded.pages, chunks = excluded.chunks, indexed_at = excluded.indexed_at""",
                     (collection.id, path, digest, size, mtime, state, problem, kind, pages, len(chunks),
                      time.time()))
        file_id = conn.execute("SELECT id FROM files WHERE collection_id = ? AND path = ?",
                               (collection.id, path)).fetchone()[0]
        for c, v in zip(chunks, vectors):
            cur = conn.execute("""INSERT INTO chunks(file_id, seq, page, start, end, heading, tokens, text)
                                  VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                               (file_id, c.seq, c.page, c.start, c.end, " > ".join(c.heading), c.tokens, c.text))
            conn.execute("INSERT INTO vectors(chunk_id, embedding) VALUES (?, ?)", (cur.lastrowid, v))
        conn.execute("UPDATE collections SET generation = generation + 1 WHERE id = ?", (collection.id,))
