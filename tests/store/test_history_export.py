"""Exporting chats as JSON and Markdown, and JSON importing back without duplicates."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from prefill.store import ConversationNotFound, HistoryStore
from prefill.store.history_export import render, to_markdown
from prefill.store.history_import import read_import_file

from .conftest import ticking_clock


def _fill(store: HistoryStore) -> tuple[int, int]:
    """Two chats: one with every field a message can have, one nearly empty."""
    rich = store.create_conversation(
        system_prompt="Be terse.", model="/models/qwen3.gguf", settings={"temperature": 0.2}
    )
    store.add_message(rich.id, "user", "What is 6 × 7?")
    answer = store.begin_answer(rich.id)
    figures = {"completion_tokens": 3, "decode_tps": 41.257, "reasoning_tokens": 9}
    store.finish_answer(answer, "42.", "stop", figures, "Six sevens:\nforty-two.")
    store.add_message(rich.id, "user", "And 6 × 8?")
    cut = store.begin_answer(rich.id)
    store.update_answer(cut, "4", "Six eig")  # never finished: a crash cut it off
    plain = store.create_conversation(title="Just a title")
    return rich.id, plain.id


def _document(store: HistoryStore, ids: list[int] | None = None) -> dict:
    doc = json.loads(render(store.export_conversations(ids), "json", exported_at=0.0))
    assert doc.pop("exported_at") == 0.0
    return doc


def test_json_export_imports_back_whole_and_only_once(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "a.sqlite3", clock=ticking_clock()) as first:
        _fill(first)
        original = _document(first)
        export = tmp_path / "all.json"
        export.write_text(render(first.export_conversations(), "json", 1.0), encoding="utf-8")
        again_here = first.import_conversations(list(read_import_file(export).conversations))
        assert _document(first) == original
    assert (again_here.imported, again_here.skipped) == (0, 2)

    with HistoryStore(tmp_path / "b.sqlite3", clock=ticking_clock(5e9)) as second:
        checked = read_import_file(export)
        result = second.import_conversations(list(checked.conversations))
        assert (checked.source, result.imported, result.skipped, result.messages) == (
            "prefill",
            2,
            0,
            4,
        )
        assert _document(second) == original
        repeat = second.import_conversations(list(read_import_file(export).conversations))
        assert (repeat.imported, repeat.skipped) == (0, 2)
        assert len(second.list_conversations()) == 2
        (rich,) = [c for c in second.list_conversations() if c.model]
        cut = second.messages(rich.id)[-1]
    assert (cut.content, cut.reasoning, cut.complete) == ("4", "Six eig", False)
    chat = original["conversations"][0]
    assert (chat["system_prompt"], chat["model"], chat["settings"]) == (
        "Be terse.",
        "/models/qwen3.gguf",
        {"temperature": 0.2},
    )
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "user", "assistant"]
    assert chat["messages"][1]["figures"]["reasoning_tokens"] == 9


def test_imported_messages_are_searchable(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "a.sqlite3") as first:
        conv = first.create_conversation()
        first.add_message(conv.id, "user", "Tell me about wombats")
        export = tmp_path / "one.json"
        export.write_text(render(first.export_conversations(), "json", 1.0), encoding="utf-8")
    with HistoryStore(tmp_path / "b.sqlite3") as second:
        second.import_conversations(list(read_import_file(export).conversations))
        hits = second.search("wombats")
    assert [(h.message_id is None, h.snippet) for h in hits] == [
        (True, "Tell me about wombats"),
        (False, "Tell me about wombats"),
    ]


def test_export_of_chosen_chats_in_order(store: HistoryStore) -> None:
    rich, plain = _fill(store)
    assert [c.title for c in store.export_conversations([plain, rich])] == [
        "Just a title",
        "What is 6 × 7?",
    ]
    with pytest.raises(ConversationNotFound):
        store.export_conversations([rich, 999])


def test_import_is_one_transaction(tmp_path: Path, store: HistoryStore, db_path: Path) -> None:
    _fill(store)
    export = tmp_path / "all.json"
    export.write_text(render(store.export_conversations(), "json", 1.0), encoding="utf-8")
    target = HistoryStore(tmp_path / "target.sqlite3")
    target.list_conversations()
    with sqlite3.connect(target.path) as raw:  # a fault the door cannot see: the disk refuses
        raw.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON conversations WHEN new.title = 'Just a title'"
            " BEGIN SELECT RAISE(ABORT, 'disk refused'); END"
        )
    raw.close()
    with pytest.raises(sqlite3.IntegrityError, match="disk refused"):
        target.import_conversations(list(read_import_file(export).conversations))
    assert target.list_conversations() == []
    target.close()


def test_markdown_is_readable(store: HistoryStore) -> None:
    rich, _ = _fill(store)
    text = to_markdown(store.export_conversations([rich]))
    assert text.startswith("# What is 6 × 7?\n\n- Model: `/models/qwen3.gguf`\n")
    assert "- Settings: temperature 0.2\n" in text
    assert "## System prompt\n\nBe terse.\n" in text
    assert "## User · 2023-11-14 22:13 UTC\n\nWhat is 6 × 7?\n" in text
    assert "> **Reasoning**\n>\n> Six sevens:\n> forty-two.\n\n42.\n" in text
    assert "*finished: stop · completion_tokens 3, decode_tps 41.26, reasoning_tokens 9*" in text
    assert "4\n\n*cut off*" in text


def test_markdown_lists_an_answers_sources_under_it(store: HistoryStore) -> None:
    chat = store.create_conversation()
    store.add_message(chat.id, "user", "How tall is it?")
    answer = store.begin_answer(chat.id)
    sources = [{"n": 1, "file": "/docs/report.pdf", "page": 3, "text": "330 m."},
               {"n": 2, "file": "C:\\notes\\tower.md", "page": None, "text": "Iron."}, "junk"]
    store.finish_answer(answer, "It is 330 m tall [1][2].", "stop", {"ttft_ms": 5.0, "sources": sources})
    text = to_markdown(store.export_conversations([chat.id]))
    assert "*finished: stop · ttft_ms 5*\n\nSources:\n\n- [1] report.pdf, page 3\n- [2] tower.md\n" in text
    assert '"text"' not in text  # the passages stay in the JSON export


def test_markdown_of_several_chats_separates_them(store: HistoryStore) -> None:
    _fill(store)
    text = render(store.export_conversations(), "md", 0.0)
    assert text.count("\n---\n\n# ") == 1
    assert "# Just a title\n" in text
