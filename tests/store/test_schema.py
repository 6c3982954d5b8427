"""Schema versions and migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from prefill.engine.message import ImagePart
from prefill.store import HistoryStore, HistoryUnavailable, SchemaTooNew
from prefill.store.api_responses import ResponseLog
from prefill.store.schema import MIGRATIONS, SCHEMA_VERSION, migrate, user_version

# The schema as version 1 shipped it, written out here so later edits to the code
# cannot change what "an old database" means.
V1_DDL = """
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT ''
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    UNIQUE (conversation_id, position)
);
CREATE INDEX conversations_by_update ON conversations (updated_at DESC, id DESC);
INSERT INTO conversations VALUES (1, 'Old chat', 10.0, 20.0, 'Be terse.');
INSERT INTO messages VALUES (1, 1, 0, 'user', 'What is a quokka?', 11.0);
INSERT INTO messages VALUES (2, 1, 1, 'assistant', 'A small marsupial.', 12.0);
PRAGMA user_version = 1;
"""


def _old_database(path: Path, ddl: str = V1_DDL) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as raw:
        raw.executescript(ddl)
    raw.close()


def test_new_file_gets_the_current_version(store: HistoryStore, db_path: Path) -> None:
    store.list_conversations()
    with sqlite3.connect(db_path) as raw:
        assert user_version(raw) == SCHEMA_VERSION == len(MIGRATIONS)


# Version 2 added these to version 1, as it shipped.
V2_DDL = (
    V1_DDL.replace("PRAGMA user_version = 1;", "")
    + """
ALTER TABLE conversations ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE messages ADD COLUMN finish_reason TEXT;
ALTER TABLE messages ADD COLUMN figures TEXT NOT NULL DEFAULT '{}';
ALTER TABLE messages ADD COLUMN complete INTEGER NOT NULL DEFAULT 1;
UPDATE conversations SET model = 'old.gguf', settings = '{"temperature": 0.5}';
UPDATE messages SET finish_reason = 'stop', figures = '{"ttft_ms": 7}' WHERE id = 2;
PRAGMA user_version = 2;
"""
)

# Version 3 added the reasoning of an answer; a second chat shows uids are told apart.
V3_DDL = (
    V2_DDL.replace("PRAGMA user_version = 2;", "")
    + """
ALTER TABLE messages ADD COLUMN reasoning TEXT NOT NULL DEFAULT '';
UPDATE messages SET reasoning = 'Recall marsupials.' WHERE id = 2;
INSERT INTO conversations (id, title, created_at, updated_at) VALUES (2, 'Empty', 30.0, 30.0);
PRAGMA user_version = 3;
"""
)


# Version 4 added a conversation's lasting uid.
V4_DDL = (
    V3_DDL.replace("PRAGMA user_version = 3;", "")
    + """
ALTER TABLE conversations ADD COLUMN uid TEXT NOT NULL DEFAULT '';
UPDATE conversations SET uid = 'uid-' || id;
CREATE UNIQUE INDEX conversations_by_uid ON conversations (uid);
PRAGMA user_version = 4;
"""
)


# Version 5 added an answer's versions.
V5_DDL = (
    V4_DDL.replace("PRAGMA user_version = 4;", "")
    + """
ALTER TABLE messages ADD COLUMN versions TEXT NOT NULL DEFAULT '[]';
ALTER TABLE messages ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 5;
"""
)


# Version 6 added a message's images.
V6_DDL = (
    V5_DDL.replace("PRAGMA user_version = 5;", "")
    + """
ALTER TABLE messages ADD COLUMN images TEXT NOT NULL DEFAULT '[]';
PRAGMA user_version = 6;
"""
)


def test_previous_version_is_migrated_with_its_rows(db_path: Path) -> None:
    assert SCHEMA_VERSION == 7, "write the new previous version's DDL into this test"
    _old_database(db_path, V6_DDL)
    log = ResponseLog(db_path)
    log.save("resp_1", "o", [], {"id": "resp_1"})
    assert log.get("resp_1", "o") is not None
    log.close()
    with HistoryStore(db_path) as store:
        assert [m.content for m in store.messages(1)] == ["What is a quokka?", "A small marsupial."]
        assert sorted(c.title for c in store.list_conversations()) == ["Empty", "Old chat"]  # the old ones alone
    with sqlite3.connect(db_path) as raw:
        assert user_version(raw) == SCHEMA_VERSION
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_version_5_gains_message_images(db_path: Path) -> None:
    _old_database(db_path, V5_DDL)
    png = _png()
    with HistoryStore(db_path) as store:
        old = store.messages(1)
        added = store.add_message(1, "user", "And this?", images=[png])
        (again,) = store.messages(1)[-1:]
    assert [m.images for m in old] == [(), ()]
    assert [i.digest for i in added.images] == [png.digest] == [i.digest for i in again.images]
    with sqlite3.connect(db_path) as raw:
        assert user_version(raw) == SCHEMA_VERSION
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _png() -> ImagePart:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 6), (10, 200, 30)).save(out, "PNG")
    return ImagePart(out.getvalue(), "image/png", 8, 6)


def test_version_4_gains_answer_versions(db_path: Path) -> None:
    _old_database(db_path, V4_DDL)
    with HistoryStore(db_path) as store:
        (_, answer) = store.messages(1)
        assert (answer.content, answer.versions, answer.version) == ("A small marsupial.", (), 0)
        again = store.regenerate_answer(answer.id)
        store.finish_answer(again.id, "A wallaby's cousin.", "stop")
        (_, answer) = store.messages(1)
        assert store.conversation(1).uid == "uid-1"
    assert (answer.content, answer.version, [v.content for v in answer.versions]) == (
        "A wallaby's cousin.", 1, ["A small marsupial."])
    with sqlite3.connect(db_path) as raw:
        assert user_version(raw) == SCHEMA_VERSION
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_version_3_is_migrated_with_its_rows(db_path: Path) -> None:
    _old_database(db_path, V3_DDL)
    with HistoryStore(db_path) as store:
        old, empty = sorted(store.list_conversations(), key=lambda c: c.id)
        (_, answer) = store.messages(old.id)
        new = store.create_conversation()
    assert (old.title, old.model, answer.reasoning) == ("Old chat", "old.gguf", "Recall marsupials.")
    uids = {old.uid, empty.uid, new.uid}
    assert len(uids) == 3 and all(len(uid) == 36 for uid in uids)
    with sqlite3.connect(db_path) as raw:
        assert user_version(raw) == SCHEMA_VERSION
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        with pytest.raises(sqlite3.IntegrityError):
            raw.execute("UPDATE conversations SET uid = ? WHERE id = 2", (old.uid,))


def test_version_2_gains_reasoning(db_path: Path) -> None:
    _old_database(db_path, V2_DDL)
    with HistoryStore(db_path) as store:
        (conv,) = store.list_conversations()
        messages = store.messages(conv.id)
        hits = store.search("quokka")
        answer_id = store.begin_answer(conv.id)
        store.update_answer(answer_id, "Mo", "The user wants")
        store.finish_answer(answer_id, "More?", "stop", {"ttft_ms": 9}, "The user wants more.")
        answer = store.message(answer_id)
    assert (conv.title, conv.model, conv.settings) == ("Old chat", "old.gguf", {"temperature": 0.5})
    assert [(m.content, m.reasoning, m.figures, m.finish_reason) for m in messages] == [
        ("What is a quokka?", "", {}, None),
        ("A small marsupial.", "", {"ttft_ms": 7}, "stop"),
    ]
    assert (answer.content, answer.reasoning) == ("More?", "The user wants more.")
    assert [(h.conversation_id, h.message_id) for h in hits] == [(1, 1)]
    with sqlite3.connect(db_path) as raw:
        assert user_version(raw) == SCHEMA_VERSION
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_first_version_is_migrated_through_every_step(db_path: Path) -> None:
    _old_database(db_path)
    with HistoryStore(db_path) as store:
        (conv,) = store.list_conversations()
        messages = store.messages(conv.id)
        hits = store.search("quokka")
    assert (conv.title, conv.system_prompt, conv.model, conv.settings) == (
        "Old chat",
        "Be terse.",
        "",
        {},
    )
    assert [(m.content, m.complete, m.figures, m.finish_reason, m.reasoning) for m in messages] == [
        ("What is a quokka?", True, {}, None, ""),
        ("A small marsupial.", True, {}, None, ""),
    ]
    assert [(h.conversation_id, h.message_id) for h in hits] == [(1, 1)]


def test_failed_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    _old_database(path)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE messages ADD COLUMN half_done TEXT")
        raise sqlite3.OperationalError("disk on fire")

    raw = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="disk on fire"):
        migrate(raw, [*MIGRATIONS, broken])
    assert user_version(raw) == 1
    columns = [row[1] for row in raw.execute("PRAGMA table_info(messages)")]
    assert "half_done" not in columns and "figures" not in columns
    raw.close()


def test_migrate_reports_the_version_it_found(tmp_path: Path) -> None:
    raw = sqlite3.connect(tmp_path / "x.sqlite3", isolation_level=None)
    assert migrate(raw) == 0
    assert migrate(raw) == SCHEMA_VERSION
    raw.close()


def test_newer_schema_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(SchemaTooNew) as info:
        HistoryStore(db_path).list_conversations()
    assert (info.value.found, info.value.known) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    assert isinstance(info.value, HistoryUnavailable)


def test_a_file_that_is_not_a_database_raises_history_unavailable(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(HistoryUnavailable) as info:
        HistoryStore(db_path).list_conversations()
    assert info.value.path == db_path
