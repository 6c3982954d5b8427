"""One write transaction on the history database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Run the block as one write transaction: committed if it returns, else rolled back.

    ``BEGIN IMMEDIATE`` takes the write lock at once, so a second writer waits (up to the
    connection's timeout) instead of failing halfway through.

    Args:
        conn: A connection in autocommit mode (``isolation_level=None``).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
