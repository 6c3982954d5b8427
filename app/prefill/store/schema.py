"""The history schema and its migrations.

The schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]`` takes a database
from version ``i`` to ``i + 1``; every pending one runs in one transaction, so a failure
leaves the file exactly as it was. Add a migration at the end; never edit a shipped one.
The full-text index is derived data and is kept by ``search.ensure_index``, not here.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Sequence

from prefill.store.transaction import transaction

Migration = Callable[[sqlite3.Connection], None]


def _run(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    # Not executescript(): it commits first, which would break the enclosing transaction.
    for statement in statements:
        conn.execute(statement)


def _v1_chat(conn: sqlite3.Connection) -> None:
    """Version 1: conversations and their messages."""
    _run(
        conn,
        [
            """CREATE TABLE conversations (
                id INTEGER PRIMARY KEY,
                title TEXT NOT NULL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                system_prompt TEXT NOT NULL DEFAULT ''
            )""",
            """CREATE TABLE messages (
                id INTEGER PRIMARY KEY,
                conversation_id INTEGER NOT NULL
                    REFERENCES conversations(id) ON DELETE CASCADE,
                position INTEGER NOT NULL,
                role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
                content TEXT NOT NULL DEFAULT '',
                created_at REAL NOT NULL,
                UNIQUE (conversation_id, position)
            )""",
            "CREATE INDEX conversations_by_update ON conversations (updated_at DESC, id DESC)",
        ],
    )


def _v2_engine_record(conn: sqlite3.Connection) -> None:
    """Version 2: the model and settings of a chat, the figures and state of an answer."""
    _run(
        conn,
        [
            "ALTER TABLE conversations ADD COLUMN model TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE conversations ADD COLUMN settings TEXT NOT NULL DEFAULT '{}'",
            "ALTER TABLE messages ADD COLUMN finish_reason TEXT",
            "ALTER TABLE messages ADD COLUMN figures TEXT NOT NULL DEFAULT '{}'",
            "ALTER TABLE messages ADD COLUMN complete INTEGER NOT NULL DEFAULT 1",
        ],
    )


def _v3_reasoning(conn: sqlite3.Connection) -> None:
    """Version 3: a reasoning model's thinking, kept apart from the answer's text."""
    _run(conn, ["ALTER TABLE messages ADD COLUMN reasoning TEXT NOT NULL DEFAULT ''"])


def _v4_conversation_uid(conn: sqlite3.Connection) -> None:
    """Version 4: a conversation's lasting identity, so an import never duplicates a chat.

    Row ids differ between databases; the uid travels in exports. Existing chats get one now.
    """
    conn.execute("ALTER TABLE conversations ADD COLUMN uid TEXT NOT NULL DEFAULT ''")
    for (row_id,) in conn.execute("SELECT id FROM conversations").fetchall():
        conn.execute("UPDATE conversations SET uid = ? WHERE id = ?", (new_uid(), row_id))
    conn.execute("CREATE UNIQUE INDEX conversations_by_uid ON conversations (uid)")


def _v5_answer_versions(conn: sqlite3.Connection) -> None:
    """Version 5: Regenerate keeps every answer. ``versions`` holds an answer's other versions (a JSON
    list of content, reasoning, finish_reason, figures, complete); ``version`` is where the shown one
    (the row's own columns) stands among them all."""
    _run(
        conn,
        [
            "ALTER TABLE messages ADD COLUMN versions TEXT NOT NULL DEFAULT '[]'",
            "ALTER TABLE messages ADD COLUMN version INTEGER NOT NULL DEFAULT 0",
        ],
    )


def _v6_message_images(conn: sqlite3.Connection) -> None:
    """Version 6: a message's images, as a JSON list of references (digest, mime, width, height, bytes);
    the images themselves are files named by their digest in the ``images`` folder beside the database
    (``store/images.py``), so an image sent in many chats is kept once."""
    _run(conn, ["ALTER TABLE messages ADD COLUMN images TEXT NOT NULL DEFAULT '[]'"])


def _v7_api_responses(conn: sqlite3.Connection) -> None:
    """Version 7: responses the server's Responses API keeps (``store``), for ``previous_response_id``
    and ``GET /v1/responses/{id}``. Private to the API: no chat, list or search reads this table.
    ``owner`` is the hashed key the request came with; ``body`` the response as JSON, ``input`` its
    input items (those of the responses it continued included)."""
    _run(
        conn,
        [
            """CREATE TABLE api_responses (
                id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                created_at REAL NOT NULL,
                input TEXT NOT NULL,
                body TEXT NOT NULL
            )""",
            "CREATE INDEX api_responses_by_age ON api_responses (created_at)",
        ],
    )


def new_uid() -> str:
    """Return a fresh conversation uid (a random UUID, as text)."""
    return str(uuid.uuid4())


MIGRATIONS: tuple[Migration, ...] = (
    _v1_chat,
    _v2_engine_record,
    _v3_reasoning,
    _v4_conversation_uid,
    _v5_answer_versions,
    _v6_message_images,
    _v7_api_responses,
)
SCHEMA_VERSION = len(MIGRATIONS)


def user_version(conn: sqlite3.Connection) -> int:
    """Return the schema version stored in the database (0 for a new file)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the database up to ``len(migrations)`` in one transaction.

    Args:
        conn: A connection in autocommit mode (``isolation_level=None``).
        migrations: The migration list; tests pass their own.

    Returns:
        The version the database had before.

    Raises:
        ValueError: If the database is newer than the list knows.
        sqlite3.Error: If a migration fails; nothing of it is kept.
    """
    with transaction(conn):
        found = user_version(conn)
        if found > len(migrations):
            raise ValueError(f"schema version {found} is newer than {len(migrations)}")
        for version in range(found, len(migrations)):
            migrations[version](conn)
        if found != len(migrations):
            # PRAGMA takes no parameters; the value is an int we computed.
            conn.execute(f"PRAGMA user_version = {len(migrations):d}")
    return found
