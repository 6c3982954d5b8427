"""Search with the FTS5 index and with the LIKE fallback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.store import HistoryStore
from prefill.store.search import excerpt, fts5_available, fts_query, search_terms

requires_fts5 = pytest.mark.skipif(not fts5_available(), reason="SQLite without FTS5")
MODES = [
    pytest.param(True, id="fts5", marks=requires_fts5),
    pytest.param(False, id="like"),
]


@pytest.fixture(params=MODES)
def history(request: pytest.FixtureRequest, db_path: Path) -> Iterator[HistoryStore]:
    with HistoryStore(db_path, use_fts=request.param) as store:
        yield store


def _ids(store: HistoryStore, query: str) -> set[tuple[int, int | None]]:
    return {(hit.conversation_id, hit.message_id) for hit in store.search(query)}


def test_this_python_has_fts5() -> None:
    # The fallback exists for odd builds; the usual CPython builds should use FTS5.
    assert fts5_available()


def test_finds_titles_and_message_text(history: HistoryStore) -> None:
    pets = history.create_conversation(title="Pet names")
    code = history.create_conversation(title="Rust lifetimes")
    ask = history.add_message(pets.id, "user", "Name my hamster please")
    borrow = history.add_message(code.id, "user", "Explain borrowing in Rust")
    assert _ids(history, "hamster") == {(pets.id, ask.id)}
    assert _ids(history, "rust") == {(code.id, None), (code.id, borrow.id)}
    assert _ids(history, "HAMSTER please") == {(pets.id, ask.id)}
    assert _ids(history, "hamster borrowing") == set()


def test_snippet_shows_the_match(history: HistoryStore) -> None:
    conv = history.create_conversation(title="t")
    long_text = "filler " * 60 + "the quokka is a marsupial " + "filler " * 60
    history.add_message(conv.id, "assistant", long_text)
    (hit,) = history.search("quokka")
    assert "quokka" in hit.snippet
    assert len(hit.snippet) < len(long_text) / 3


@pytest.mark.parametrize(
    "query",
    [
        'foo"',
        "AND OR (",
        '"',
        "NEAR(a b)",
        "*",
        "col:x",
        "'; DROP TABLE messages; --",
        "100%",
        "a_b",
        "\\",
        "",
    ],
)
def test_hostile_queries_never_raise(history: HistoryStore, query: str) -> None:
    conv = history.create_conversation(title="safe")
    history.add_message(conv.id, "user", "plain text and or foo")
    hits = history.search(query)
    assert isinstance(hits, list)
    assert history.messages(conv.id)[0].content == "plain text and or foo"


def test_like_wildcards_are_literal(history: HistoryStore) -> None:
    conv = history.create_conversation(title="x")
    history.add_message(conv.id, "user", "nothing special here")
    assert history.search("%") == []
    assert history.search("_") == []


def test_quoted_words_still_match(history: HistoryStore) -> None:
    conv = history.create_conversation(title="x")
    msg = history.add_message(conv.id, "user", 'say "foo" loudly')
    assert _ids(history, 'foo"') == {(conv.id, msg.id)}


def test_deleted_chats_and_edits_leave_the_results(history: HistoryStore) -> None:
    conv = history.create_conversation(title="Walrus facts")
    msg = history.add_message(conv.id, "user", "tell me about walruses")
    history.edit_message(msg.id, "tell me about narwhals")
    assert _ids(history, "walruses") == set()
    assert _ids(history, "narwhals") == {(conv.id, msg.id)}
    history.rename_conversation(conv.id, "Whales")
    assert _ids(history, "walrus") == set()
    history.delete_conversation(conv.id)
    assert history.search("narwhals") == [] and history.search("whales") == []


def test_streaming_answer_is_found_once_finished(history: HistoryStore) -> None:
    conv = history.create_conversation(title="x")
    answer_id = history.begin_answer(conv.id)
    history.finish_answer(answer_id, "the capybara is the largest rodent", "stop")
    assert _ids(history, "capybara") == {(conv.id, answer_id)}


@requires_fts5
def test_prefix_match_on_the_last_word_with_fts(db_path: Path) -> None:
    with HistoryStore(db_path, use_fts=True) as store:
        conv = store.create_conversation(title="x")
        msg = store.add_message(conv.id, "user", "quantisation formats")
        assert _ids(store, "quanti") == {(conv.id, msg.id)}


@requires_fts5
def test_index_is_rebuilt_after_running_without_it(db_path: Path) -> None:
    with HistoryStore(db_path, use_fts=True) as store:
        conv = store.create_conversation(title="x")
        first = store.add_message(conv.id, "user", "first axolotl")
    with HistoryStore(db_path, use_fts=False) as store:
        late = store.add_message(conv.id, "user", "second axolotl")
        interrupted = store.begin_answer(conv.id)
        store.update_answer(interrupted, "half an axolotl")
    with HistoryStore(db_path, use_fts=True) as store:
        assert {hit.message_id for hit in store.search("axolotl")} == {
            first.id,
            late.id,
            interrupted,
        }


def test_query_helpers() -> None:
    assert search_terms('  foo "  ( ) AND  ') == ["foo", "AND"]
    assert fts_query(['foo"', "bar"]) == '"foo""" "bar"*'
    assert excerpt("a" * 100 + " Needle " + "b" * 100, "needle", width=5) == "…aaaa Needle bbbb…"
