"""The documents index: collections, their files, passages, FTS5 text and vectors, in one SQLite file.

It is its own file, `documents.sqlite3`, in the history's folder, not tables inside the history: indexing
writes for minutes (a transaction per file) and would hold the history's one writer from the chats
meanwhile; the index can be large, and can be deleted and rebuilt from the files without touching a chat.

Tables: `collections` (name, the embedding model's id and vector size), `files` (path, content hash,
mtime, state `indexed` or `failed`, the problem in words), `roots` (the files and folders a collection was
made from, which `watch` looks under for changes), `chunks` (text, page, character span, heading
path), `chunks_fts` (FTS5 over their text and headings, kept by triggers) and `vectors` (one float32 blob
per chunk, normalised). Vectors are searched by numpy over the collection's matrix held in memory, or by
sqlite-vec's `vec_distance_cosine` when asked and the extension loads (see `vectors`).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from prefill.documents.errors import CollectionNotFound, IndexUnavailable
from prefill.engine.private_paths import private_file, private_folder
from prefill.store.transaction import transaction

INDEX_FILE = "documents.sqlite3"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    model_id TEXT NOT NULL DEFAULT '',
    n_embd INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('indexed', 'failed')),
    problem TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL DEFAULT '',
    pages INTEGER NOT NULL DEFAULT 0,
    chunks INTEGER NOT NULL DEFAULT 0,
    indexed_at REAL NOT NULL,
    UNIQUE (collection_id, path)
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    page INTEGER,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    tokens INTEGER NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (file_id, seq)
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, heading, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading) VALUES ('delete', old.id, old.text, old.heading);
END;
CREATE TABLE IF NOT EXISTS roots (
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    UNIQUE (collection_id, path)
);
CREATE TABLE IF NOT EXISTS vectors (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    embedding BLOB NOT NULL
);
"""


@dataclass(frozen=True)
class Collection:
    """A named set of files searched together, and the embedding model its vectors come from."""

    id: int
    name: str
    model_id: str
    n_embd: int
    generation: int


@dataclass(frozen=True)
class FileRecord:
    """A file of a collection as last indexed: `state` is indexed or failed (then `problem` says why)."""

    path: str
    sha256: str
    size: int
    mtime: float
    state: str
    problem: str
    kind: str
    pages: int
    chunks: int


@dataclass(frozen=True)
class CollectionSummary:
    """What a collection holds: for `prefill docs ls` and the window's list."""

    name: str
    model_id: str
    n_embd: int
    files: int
    failed: int
    chunks: int
    bytes: int


def default_index_path(history_path: Path) -> Path:
    """The index beside the history file."""
    return history_path.parent / INDEX_FILE


def open_index(path: Path) -> sqlite3.Connection:
    """Open (creating) the index in the calling thread: WAL, foreign keys on, the schema in place.

    Raises:
        IndexUnavailable: It cannot be created or opened, or it was written by a newer Prefill.
    """
    try:
        if str(path) != ":memory:":
            private_folder(path.parent)
            private_file(path)
        conn = sqlite3.connect(path, isolation_level=None, timeout=10.0, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise IndexUnavailable(path, str(exc)) from exc
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            raise IndexUnavailable(path, f"it was written by a newer Prefill (schema {found}, this one knows "
                                   f"{SCHEMA_VERSION})")
        conn.executescript(_SCHEMA)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except sqlite3.Error as exc:
        conn.close()
        raise IndexUnavailable(path, str(exc)) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _collection(row: tuple[int, str, str, int, int]) -> Collection:
    return Collection(*row)


def get_collection(conn: sqlite3.Connection, name: str) -> Collection:
    """Raises CollectionNotFound."""
    row = conn.execute("SELECT id, name, model_id, n_embd, generation FROM collections WHERE name = ?",
                       (name,)).fetchone()
    if row is None:
        raise CollectionNotFound(name)
    return _collection(row)


def ensure_collection(conn: sqlite3.Connection, name: str) -> Collection:
    """The collection named `name`, made (with no model yet) when missing."""
    conn.execute("INSERT OR IGNORE INTO collections(name, created) VALUES (?, ?)", (name, time.time()))
    return get_collection(conn, name)


def list_collections(conn: sqlite3.Connection) -> list[CollectionSummary]:
    rows = conn.execute("""
        SELECT c.name, c.model_id, c.n_embd,
               COUNT(f.id), COALESCE(SUM(f.state = 'failed'), 0), COALESCE(SUM(f.chunks), 0),
               COALESCE(SUM(f.size), 0)
        FROM collections c LEFT JOIN files f ON f.collection_id = c.id
        GROUP BY c.id ORDER BY c.name""").fetchall()
    return [CollectionSummary(*r) for r in rows]


def remove_collection(conn: sqlite3.Connection, name: str) -> None:
    """Raises CollectionNotFound."""
    c = get_collection(conn, name)
    with transaction(conn):
        _delete_chunks(conn, "file_id IN (SELECT id FROM files WHERE collection_id = ?)", (c.id,))
        conn.execute("DELETE FROM files WHERE collection_id = ?", (c.id,))
        conn.execute("DELETE FROM roots WHERE collection_id = ?", (c.id,))
        conn.execute("DELETE FROM collections WHERE id = ?", (c.id,))


def list_files(conn: sqlite3.Connection, collection: Collection) -> list[FileRecord]:
    rows = conn.execute("""SELECT path, sha256, size, mtime, state, problem, kind, pages, chunks FROM files
                           WHERE collection_id = ? ORDER BY path""", (collection.id,)).fetchall()
    return [FileRecord(*r) for r in rows]


def file_record(conn: sqlite3.Connection, collection: Collection, path: str) -> FileRecord | None:
    row = conn.execute("""SELECT path, sha256, size, mtime, state, problem, kind, pages, chunks FROM files
                          WHERE collection_id = ? AND path = ?""", (collection.id, path)).fetchone()
    return FileRecord(*row) if row else None


def set_model(conn: sqlite3.Connection, collection: Collection, model_id: str, n_embd: int) -> Collection:
    """Give the collection a new embedding model: every passage and vector goes, every file is to be read
    again (their rows go too, so the next run indexes each)."""
    with transaction(conn):
        _delete_chunks(conn, "file_id IN (SELECT id FROM files WHERE collection_id = ?)", (collection.id,))
        conn.execute("DELETE FROM files WHERE collection_id = ?", (collection.id,))
        conn.execute("UPDATE collections SET model_id = ?, n_embd = ?, generation = generation + 1 WHERE id = ?",
                     (model_id, n_embd, collection.id))
    return get_collection(conn, collection.name)


def forget_file(conn: sqlite3.Connection, collection: Collection, path: str) -> None:
    """Drop a file (gone from disk) and its passages."""
    with transaction(conn):
        _delete_chunks(conn, "file_id IN (SELECT id FROM files WHERE collection_id = ? AND path = ?)",
                       (collection.id, path))
        conn.execute("DELETE FROM files WHERE collection_id = ? AND path = ?", (collection.id, path))
        conn.execute("UPDATE collections SET generation = generation + 1 WHERE id = ?", (collection.id,))


def _delete_chunks(conn: sqlite3.Connection, where: str, args: tuple[object, ...]) -> None:
    # Deleted explicitly, not left to ON DELETE CASCADE, so the FTS trigger runs for each passage.
    conn.execute(f"DELETE FROM vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE {where})", args)
    conn.execute(f"DELETE FROM chunks WHERE {where}", args)
