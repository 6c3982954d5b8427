"""Conversations: create, list, rename, settings, delete."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from prefill.store import ConversationNotFound, HistoryStore, StoreClosed


def test_create_returns_the_stored_row(store: HistoryStore) -> None:
    conv = store.create_conversation(
        system_prompt="Be brief.", model="/models/qwen.gguf", settings={"temperature": 0.2}
    )
    assert conv.title == "New chat"
    assert conv.system_prompt == "Be brief."
    assert conv.model == "/models/qwen.gguf"
    assert conv.settings == {"temperature": 0.2}
    assert conv.created_at == conv.updated_at
    assert store.conversation(conv.id) == conv


def test_list_is_newest_first_by_update(store: HistoryStore) -> None:
    first = store.create_conversation(title="first")
    second = store.create_conversation(title="second")
    assert [c.title for c in store.list_conversations()] == ["second", "first"]
    store.add_message(first.id, "user", "hello again")
    assert [c.id for c in store.list_conversations()] == [first.id, second.id]


def test_rename_prompt_model_and_settings_are_saved(store: HistoryStore) -> None:
    conv = store.create_conversation()
    store.rename_conversation(conv.id, "Renamed")
    store.set_system_prompt(conv.id, "You are a pirate.")
    store.set_conversation_model(conv.id, "llama-3.2-1b")
    store.set_conversation_settings(conv.id, {"top_k": 20, "stop": ["</s>"]})
    got = store.conversation(conv.id)
    assert (got.title, got.system_prompt, got.model) == (
        "Renamed",
        "You are a pirate.",
        "llama-3.2-1b",
    )
    assert got.settings == {"top_k": 20, "stop": ["</s>"]}
    assert got.updated_at > conv.updated_at


def test_settings_that_are_not_json_raise_and_change_nothing(store: HistoryStore) -> None:
    conv = store.create_conversation(settings={"a": 1})
    with pytest.raises(TypeError):
        store.set_conversation_settings(conv.id, {"a": object()})
    assert store.conversation(conv.id).settings == {"a": 1}


def test_delete_cascades_to_messages(store: HistoryStore, db_path: Path) -> None:
    conv = store.create_conversation()
    keep = store.create_conversation()
    store.add_message(conv.id, "user", "bye")
    store.add_message(keep.id, "user", "stay")
    store.delete_conversation(conv.id)
    assert [c.id for c in store.list_conversations()] == [keep.id]
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("SELECT conversation_id FROM messages").fetchall() == [(keep.id,)]


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.conversation(999),
        lambda s: s.rename_conversation(999, "x"),
        lambda s: s.set_system_prompt(999, "x"),
        lambda s: s.set_conversation_settings(999, {}),
        lambda s: s.delete_conversation(999),
        lambda s: s.messages(999),
        lambda s: s.add_message(999, "user", "x"),
        lambda s: s.begin_answer(999),
    ],
)
def test_missing_conversation_raises_a_typed_error(store: HistoryStore, call) -> None:
    with pytest.raises(ConversationNotFound) as info:
        call(store)
    assert info.value.conversation_id == 999


def test_connection_opens_on_first_use_and_closes(db_path: Path) -> None:
    store = HistoryStore(db_path)
    assert not db_path.exists()
    store.create_conversation()
    assert db_path.exists()
    store.close()
    store.close()
    with pytest.raises(StoreClosed):
        store.list_conversations()


def test_store_may_be_built_in_one_thread_and_used_in_another(db_path: Path) -> None:
    store = HistoryStore(db_path)  # built here, like the GUI builds it for its worker
    titles: list[str] = []
    worker = threading.Thread(
        target=lambda: titles.append(store.create_conversation(title="worker").title)
    )
    worker.start()
    worker.join()
    assert titles == ["worker"]
    with pytest.raises(sqlite3.ProgrammingError):
        store.list_conversations()  # the connection belongs to the worker thread


def test_file_is_in_wal_mode_with_foreign_keys(store: HistoryStore, db_path: Path) -> None:
    store.create_conversation()
    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_context_manager_closes(db_path: Path) -> None:
    with HistoryStore(db_path) as store:
        store.create_conversation()
    with pytest.raises(StoreClosed):
        store.create_conversation()
