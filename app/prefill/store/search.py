"""Search across chat titles and message text.

With SQLite's FTS5 (present in the usual Python builds) two full-text tables mirror the
titles and the messages, kept in step by triggers; without it, search falls back to LIKE.
The index is derived data: ``ensure_index`` creates or rebuilds it on open, so it is not
part of the versioned schema. A streaming answer is left out of the index until it is
finished, so ``update_answer`` stays one plain UPDATE.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import NamedTuple

from prefill.store.transaction import transaction

SNIPPET_WORDS = 12
_SNIPPET_CHARS = 40

_TRIGGERS: dict[str, str] = {
    "message_text_insert": """CREATE TRIGGER message_text_insert AFTER INSERT ON messages
        WHEN new.complete = 1 BEGIN
            INSERT INTO message_text (rowid, content) VALUES (new.id, new.content);
        END""",
    "message_text_update": """CREATE TRIGGER message_text_update
        AFTER UPDATE OF content, complete ON messages WHEN new.complete = 1 BEGIN
            DELETE FROM message_text WHERE rowid = old.id;
            INSERT INTO message_text (rowid, content) VALUES (new.id, new.content);
        END""",
    "message_text_delete": """CREATE TRIGGER message_text_delete AFTER DELETE ON messages BEGIN
            DELETE FROM message_text WHERE rowid = old.id;
        END""",
    "title_text_insert": """CREATE TRIGGER title_text_insert AFTER INSERT ON conversations BEGIN
            INSERT INTO title_text (rowid, title) VALUES (new.id, new.title);
        END""",
    "title_text_update": """CREATE TRIGGER title_text_update
        AFTER UPDATE OF title ON conversations BEGIN
            DELETE FROM title_text WHERE rowid = old.id;
            INSERT INTO title_text (rowid, title) VALUES (new.id, new.title);
        END""",
    "title_text_delete": """CREATE TRIGGER title_text_delete AFTER DELETE ON conversations BEGIN
            DELETE FROM title_text WHERE rowid = old.id;
        END""",
}


class SearchHit(NamedTuple):
    """One search result.

    Attributes:
        conversation_id: The chat that matched.
        message_id: The message that matched, None when the title matched.
        snippet: The title, or a short excerpt of the message around the match.
    """

    conversation_id: int
    message_id: int | None
    snippet: str


@functools.lru_cache(maxsize=1)
def fts5_available() -> bool:
    """Return True if this Python's SQLite was built with FTS5."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5 (text)")
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()
    return True


def ensure_index(conn: sqlite3.Connection, use_fts: bool) -> None:
    """Create, repair or retire the full-text index, in one transaction.

    With ``use_fts`` the tables and triggers are created when missing and refilled from
    the messages; answers left incomplete by a crash are indexed as they stand. Without
    it the triggers are dropped, so writes never need the fts5 module.

    Args:
        conn: A connection in autocommit mode, schema up to date.
        use_fts: Whether to keep an FTS5 index (requires ``fts5_available()``).
    """
    with transaction(conn):
        present = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
        if not use_fts:
            for name in _TRIGGERS.keys() & present:
                conn.execute(f"DROP TRIGGER {name}")
        elif _TRIGGERS.keys() <= present:
            conn.execute(
                "INSERT INTO message_text (rowid, content) SELECT id, content FROM messages"
                " WHERE complete = 0 AND id NOT IN (SELECT rowid FROM message_text)"
            )
        else:
            _rebuild(conn, present)


def _rebuild(conn: sqlite3.Connection, present: set[str]) -> None:
    for name in _TRIGGERS.keys() & present:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS message_text USING fts5 (content)")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS title_text USING fts5 (title)")
    conn.execute("DELETE FROM message_text")
    conn.execute("DELETE FROM title_text")
    conn.execute("INSERT INTO message_text (rowid, content) SELECT id, content FROM messages")
    conn.execute("INSERT INTO title_text (rowid, title) SELECT id, title FROM conversations")
    for ddl in _TRIGGERS.values():
        conn.execute(ddl)


def search_terms(query: str) -> list[str]:
    """Split a query into the words that are searched for (all must match).

    Words without a letter or digit are dropped: they can never match a token.
    """
    return [word for word in query.split() if any(ch.isalnum() for ch in word)]


def fts_query(terms: list[str]) -> str:
    """Quote words as FTS5 strings, so no input is read as syntax; the last is a prefix."""
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms]
    quoted[-1] += "*"
    return " ".join(quoted)


def search(conn: sqlite3.Connection, query: str, use_fts: bool, limit: int) -> list[SearchHit]:
    """Find chats whose title, and messages whose text, hold every word of ``query``.

    Args:
        conn: The history connection.
        query: What the person typed; any text is safe.
        use_fts: Whether the FTS5 index is kept (see ensure_index).
        limit: At most this many title hits and this many message hits.

    Returns:
        Title hits first (best first), then message hits (best first).
    """
    terms = search_terms(query)
    if not terms:
        return []
    if use_fts:
        return _search_fts(conn, fts_query(terms), limit)
    return _search_like(conn, terms, limit)


def _search_fts(conn: sqlite3.Connection, match: str, limit: int) -> list[SearchHit]:
    titles = conn.execute(
        "SELECT c.id, c.title FROM title_text JOIN conversations c ON c.id = title_text.rowid"
        " WHERE title_text MATCH ? ORDER BY rank LIMIT ?",
        (match, limit),
    ).fetchall()
    messages = conn.execute(
        "SELECT m.conversation_id, m.id,"
        f" snippet(message_text, 0, '', '', '…', {SNIPPET_WORDS:d})"
        " FROM message_text JOIN messages m ON m.id = message_text.rowid"
        " WHERE message_text MATCH ? ORDER BY rank LIMIT ?",
        (match, limit),
    ).fetchall()
    return [SearchHit(row[0], None, row[1]) for row in titles] + [
        SearchHit(row[0], row[1], row[2]) for row in messages
    ]


def _like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _search_like(conn: sqlite3.Connection, terms: list[str], limit: int) -> list[SearchHit]:
    patterns = [_like_pattern(term) for term in terms]

    def where(column: str) -> str:
        return " AND ".join(f"{column} LIKE ? ESCAPE '\\'" for _ in terms)

    titles = conn.execute(
        f"SELECT id, title FROM conversations WHERE {where('title')}"
        " ORDER BY updated_at DESC, id DESC LIMIT ?",
        (*patterns, limit),
    ).fetchall()
    messages = conn.execute(
        f"SELECT conversation_id, id, content FROM messages WHERE {where('content')}"
        " ORDER BY id DESC LIMIT ?",
        (*patterns, limit),
    ).fetchall()
    return [SearchHit(row[0], None, row[1]) for row in titles] + [
        SearchHit(row[0], row[1], excerpt(row[2], terms[0])) for row in messages
    ]


def excerpt(text: str, term: str, width: int = _SNIPPET_CHARS) -> str:
    """Cut about ``2 * width`` characters of ``text`` around the first ``term`` (any case)."""
    flat = " ".join(text.split())
    at = max(flat.casefold().find(term.casefold()), 0)
    start, end = max(at - width, 0), min(at + len(term) + width, len(flat))
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
