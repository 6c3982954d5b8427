"""Opening the history file (created or migrated on the way)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from prefill.engine.private_paths import private_file, private_folder
from prefill.store import schema, search
from prefill.store.errors import HistoryUnavailable, SchemaTooNew
from prefill.store.transaction import transaction

__all__ = ["connect", "transaction"]


def connect(path: Path, use_fts: bool) -> sqlite3.Connection:
    """Open the history, creating or migrating it, in the calling thread.

    The file is put in WAL mode with ``synchronous=NORMAL``: a killed process loses no
    committed transaction, and readers never block the writer.

    Args:
        path: The database file; its folder is created when missing.
        use_fts: Keep the FTS5 search index (see ``search.ensure_index``).

    Raises:
        SchemaTooNew: The file was written by a newer Prefill.
        HistoryUnavailable: The file cannot be created, opened or migrated.
    """
    try:
        private_folder(path.parent)
        private_file(path)  # SQLite gives its -wal and -shm files the database's mode
        conn = sqlite3.connect(path, isolation_level=None, timeout=5.0)
    except (OSError, sqlite3.Error) as exc:
        raise HistoryUnavailable(path, str(exc)) from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        found = schema.user_version(conn)
        if found > schema.SCHEMA_VERSION:
            raise SchemaTooNew(path, found, schema.SCHEMA_VERSION)
        schema.migrate(conn)
        search.ensure_index(conn, use_fts)
    except sqlite3.Error as exc:
        conn.close()
        raise HistoryUnavailable(path, str(exc)) from exc
    except BaseException:
        conn.close()
        raise
    return conn
