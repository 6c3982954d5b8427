"""Responses kept for the server's Responses API (`store: true`), in the history's database.

A kept response is its body and its input items (those of the responses it continued from
included), so `previous_response_id` needs one read. The table is the API's alone: no chat, list,
search or export reads it, and a response is found only by its id and the hashed key that made it.
It is bounded: at most `limit` responses and none older than `max_age_s`; the oldest go first,
on every save.

``ResponseLog`` is meant for one thread, as ``HistoryStore`` is: it opens its connection on first
use, in that thread.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefill.store import db, search
from prefill.store.errors import StoreClosed
from prefill.store.history import default_history_path

MAX_RESPONSES = 1000  # kept at most; the oldest go first
MAX_AGE_S = 30 * 24 * 3600.0  # OpenAI keeps a stored response 30 days; so does this
MAX_BYTES = 256 * 2**20  # all kept responses together (their JSON); the oldest go first


@dataclass(frozen=True)
class StoredResponse:
    """A kept response: its body (the Responses API's object) and its input items."""

    body: dict[str, Any]
    input: list[Any]
    size: int = 0  # bytes of its JSON as kept (input and body)


class ResponseLog:
    """The kept responses.

    Args:
        path: The database file (default: the history's, ``default_history_path()``).
        limit: Responses kept at most (0: none is kept).
        max_age_s: A response older than this is gone.
        max_bytes: What all of them take together at most (their JSON); the oldest go first.
        clock: Seconds since the epoch; tests pass their own.
    """

    def __init__(self, path: Path | None = None, *, limit: int = MAX_RESPONSES, max_age_s: float = MAX_AGE_S,
                 max_bytes: int = MAX_BYTES, clock: Callable[[], float] = time.time):
        self.path = path if path is not None else default_history_path()
        self.limit = limit
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    @property
    def _db(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreClosed(f"the history at {self.path} is closed")
        if self._conn is None:
            self._conn = db.connect(self.path, search.fts5_available())
        return self._conn

    def close(self) -> None:
        """Close the connection (in the thread that used it); later calls raise StoreClosed."""
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def save(self, response_id: str, owner: str, input_items: list[Any], body: dict[str, Any]) -> None:
        """Keep a response (replacing one of the same id), then drop what is past the bounds."""
        if self.limit <= 0:
            return
        now = self._clock()
        with db.transaction(self._db) as conn:
            conn.execute("INSERT OR REPLACE INTO api_responses (id, owner, created_at, input, body) "
                         "VALUES (?, ?, ?, ?, ?)",
                         (response_id, owner, now, _json(input_items), _json(body)))
            conn.execute("DELETE FROM api_responses WHERE created_at < ?", (now - self.max_age_s,))
            conn.execute("DELETE FROM api_responses WHERE id IN (SELECT id FROM api_responses "
                         "ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)", (self.limit,))
            conn.execute("DELETE FROM api_responses WHERE id IN (SELECT id FROM (SELECT id, SUM(length(input) + "
                         "length(body)) OVER (ORDER BY created_at DESC, rowid DESC) AS kept FROM api_responses) "
                         "WHERE kept > ?)", (self.max_bytes,))

    def get(self, response_id: str, owner: str) -> StoredResponse | None:
        """The response `owner` kept under this id; None if there is none (or it is past its age)."""
        row = self._db.execute("SELECT input, body FROM api_responses WHERE id = ? AND owner = ? AND created_at >= ?",
                               (response_id, owner, self._clock() - self.max_age_s)).fetchone()
        if row is None:
            return None
        return StoredResponse(json.loads(row["body"]), json.loads(row["input"]), len(row["input"]) + len(row["body"]))

    def delete(self, response_id: str, owner: str) -> bool:
        """Forget a response; False if `owner` kept none under this id."""
        with db.transaction(self._db) as conn:
            return conn.execute("DELETE FROM api_responses WHERE id = ? AND owner = ?",
                                (response_id, owner)).rowcount > 0

    def count(self) -> int:
        """How many responses are kept (of every owner)."""
        return int(self._db.execute("SELECT COUNT(*) FROM api_responses").fetchone()[0])


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))  # ASCII: a lone surrogate a client sent is kept escaped
