"""An answer's versions (Regenerate keeps every answer) and branches, in the store and its files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefill.store import HistoryStore, ImportRejected
from prefill.store.history_export import to_markdown, write_export
from prefill.store.history_import import parse_import, read_import_file
from prefill.store.records import AnswerVersion
from tests.store.conftest import ticking_clock


def _chat_with_three_answers(store: HistoryStore) -> tuple[int, int]:
    """A chat whose answer was regenerated twice: versions "one", "two" (with a tool call), "three"."""
    cid = store.create_conversation(system_prompt="Be brief.").id
    store.add_message(cid, "user", "Count")
    answer = store.begin_answer(cid)
    store.finish_answer(answer, "one", "stop", {"completion_tokens": 1}, "thinking one")
    store.add_message(cid, "user", "later question")  # kept with version "one" by the regenerate
    again = store.regenerate_answer(answer)
    assert (again.content, again.complete, again.version, len(again.versions)) == ("", False, 1, 1)
    assert [m.content for m in store.messages(cid)] == ["Count", ""]
    assert [t.content for t in again.versions[0].later] == ["later question"]
    store.update_answer(answer, "tw")
    store.finish_answer(answer, "two", "tool_calls", {"tool_calls": [{"tool": "clock", "result": "12:00"}]})
    store.regenerate_answer(answer)
    store.finish_answer(answer, "three", "length", {"completion_tokens": 3})
    return cid, answer


def test_regenerate_twice_keeps_three_versions_and_pages_them(store: HistoryStore) -> None:
    _, answer = _chat_with_three_answers(store)
    shown = store.message(answer)
    assert (shown.content, shown.version) == ("three", 2)
    assert [v.content for v in shown.all_versions()] == ["one", "two", "three"]
    first = store.show_version(answer, 0)
    assert (first.content, first.reasoning, first.finish_reason, dict(first.figures), first.version) == (
        "one", "thinking one", "stop", {"completion_tokens": 1}, 0)
    assert [v.content for v in first.versions] == ["two", "three"]
    second = store.show_version(answer, 1)
    assert second.figures["tool_calls"] == [{"tool": "clock", "result": "12:00"}]
    assert store.show_version(answer, 99).content == "three"  # clamped to those there are
    assert store.search("three")[0].message_id == answer  # the shown version is the one searched


def _chat(store: HistoryStore, *texts: str) -> tuple[int, list[int]]:
    """A chat of these turns, questions and answers by turns; the ids of its messages."""
    cid = store.create_conversation().id
    return cid, [store.add_message(cid, "user" if n % 2 == 0 else "assistant", t).id for n, t in enumerate(texts)]


def _shown(store: HistoryStore, cid: int) -> list[str]:
    return [m.content for m in store.messages(cid)]


def test_regenerate_keeps_the_later_turns_with_the_version_before_and_pages_them_back(store: HistoryStore) -> None:
    cid, ids = _chat(store, "q1", "a1", "q2", "a2")
    again = store.regenerate_answer(ids[1])  # a middle answer: nothing after it is deleted
    assert _shown(store, cid) == ["q1", ""]
    assert [(t.role, t.content) for t in again.versions[0].later] == [("user", "q2"), ("assistant", "a2")]
    store.finish_answer(ids[1], "a1 again", "stop")
    store.add_message(cid, "user", "q2 on the new branch")
    back = store.show_version(ids[1], 0)  # ‹: the answer before, and the turns that followed it
    assert (back.content, back.version, len(back.versions)) == ("a1", 0, 1)
    assert _shown(store, cid) == ["q1", "a1", "q2", "a2"]
    assert [t.content for t in back.versions[0].later] == ["q2 on the new branch"]  # the new branch, kept in turn
    store.show_version(ids[1], 1)  # ›
    assert _shown(store, cid) == ["q1", "a1 again", "q2 on the new branch"]
    store.regenerate_answer(ids[1])  # a third: each version keeps its own branch
    store.finish_answer(ids[1], "a1 third", "stop")
    assert [[t.content for t in v.later] for v in store.message(ids[1]).all_versions()] == [
        ["q2", "a2"], ["q2 on the new branch"], []]
    assert store.show_version(ids[1], 0).content == "a1" and _shown(store, cid) == ["q1", "a1", "q2", "a2"]


def test_an_answer_in_a_kept_branch_regenerated_keeps_its_own_later_turns(store: HistoryStore) -> None:
    cid, ids = _chat(store, "q1", "a1", "q2", "a2", "q3", "a3")
    store.regenerate_answer(ids[1])
    store.finish_answer(ids[1], "a1 again", "stop")
    store.show_version(ids[1], 0)
    a2 = store.messages(cid)[3]  # the old branch's answer, back as a message (a new id)
    assert a2.content == "a2"
    store.regenerate_answer(a2.id)  # q3 and a3 go with a2's version before, inside a1's branch
    store.finish_answer(a2.id, "a2 again", "stop")
    assert _shown(store, cid) == ["q1", "a1", "q2", "a2 again"]
    store.show_version(ids[1], 1)  # the other branch of a1, then back: a2 and its versions as they were
    store.show_version(ids[1], 0)
    a2 = store.messages(cid)[3]
    assert (a2.content, [v.content for v in a2.all_versions()]) == ("a2 again", ["a2", "a2 again"])
    store.show_version(a2.id, 0)
    assert _shown(store, cid) == ["q1", "a1", "q2", "a2", "q3", "a3"]


def test_a_failed_version_of_a_middle_answer_gives_the_later_turns_back(store: HistoryStore) -> None:
    cid, ids = _chat(store, "q1", "a1", "q2", "a2")
    store.regenerate_answer(ids[1])
    back = store.show_version(ids[1], 0, drop_shown=True)
    assert (back.content, back.versions, back.complete) == ("a1", (), True)
    assert _shown(store, cid) == ["q1", "a1", "q2", "a2"]


def test_a_version_that_turns_followed_is_not_dropped(store: HistoryStore) -> None:
    cid, ids = _chat(store, "q1", "a1", "q2", "a2")
    store.regenerate_answer(ids[1])
    store.finish_answer(ids[1], "a1 again", "stop")
    store.add_message(cid, "user", "q2 again")
    back = store.show_version(ids[1], 0, drop_shown=True)  # asked to drop a version with turns after it
    assert [v.content for v in back.all_versions()] == ["a1", "a1 again"] and back.version == 0
    assert _shown(store, cid) == ["q1", "a1", "q2", "a2"]
    assert [t.content for t in back.versions[0].later] == ["q2 again"]


def test_an_edited_answer_keeps_its_words_and_later_turns_and_a_summary_is_edited_in_place(
        store: HistoryStore) -> None:
    cid, ids = _chat(store, "q1", "a1", "q2", "a2")
    edited = store.edit_message(ids[1], "a1 edited")
    assert [v.content for v in edited.all_versions()] == ["a1", "a1 edited"]
    assert _shown(store, cid) == ["q1", "a1 edited"]
    store.show_version(ids[1], 0)
    assert _shown(store, cid) == ["q1", "a1", "q2", "a2"]
    summary = store.add_message(cid, "system", "the chat so far", figures={"compaction": {}})
    store.add_message(cid, "user", "q3")
    store.edit_message(summary.id, "the chat, in other words")
    assert _shown(store, cid) == ["q1", "a1", "q2", "a2", "the chat, in other words", "q3"]


def test_a_failed_version_is_dropped_and_the_one_before_shown(store: HistoryStore) -> None:
    _, answer = _chat_with_three_answers(store)
    store.regenerate_answer(answer)
    back = store.show_version(answer, 2, drop_shown=True)
    assert (back.content, back.version, [v.content for v in back.all_versions()]) == (
        "three", 2, ["one", "two", "three"])


def test_versions_and_the_chosen_one_survive_a_restart(db_path: Path) -> None:
    with HistoryStore(db_path, clock=ticking_clock()) as store:
        cid, answer = _chat_with_three_answers(store)
        store.show_version(answer, 1)
    with HistoryStore(db_path) as again:
        shown = again.messages(cid)[-1]
    assert (shown.content, shown.version, [v.content for v in shown.all_versions()]) == (
        "two", 1, ["one", "two", "three"])


def test_only_an_answer_is_regenerated(store: HistoryStore) -> None:
    cid = store.create_conversation().id
    question = store.add_message(cid, "user", "hi")
    with pytest.raises(ValueError, match="only an answer"):
        store.regenerate_answer(question.id)


def test_a_branch_holds_the_messages_up_to_the_one_chosen(store: HistoryStore) -> None:
    cid, answer = _chat_with_three_answers(store)
    store.set_conversation_settings(cid, {"sampling": {"temperature": 0.2}})
    store.set_conversation_model(cid, "small.gguf")
    store.show_version(answer, 1)
    store.add_message(cid, "user", "and then?")
    branch = store.branch_conversation(answer)
    assert branch.id != cid and branch.uid != store.conversation(cid).uid
    assert branch.title == f"Branch of {store.conversation(cid).title}"
    assert (branch.system_prompt, branch.model, dict(branch.settings)) == (
        "Be brief.", "small.gguf", {"sampling": {"temperature": 0.2}})
    copied = store.messages(branch.id)
    assert [(m.role, m.content) for m in copied] == [("user", "Count"), ("assistant", "two")]
    assert [v.content for v in copied[1].all_versions()] == ["one", "two", "three"]
    assert [m.content for m in store.messages(cid)][-1] == "and then?"  # the source is untouched


def test_export_and_import_keep_the_versions(store: HistoryStore, tmp_path: Path) -> None:
    cid, answer = _chat_with_three_answers(store)
    store.show_version(answer, 1)
    path = tmp_path / "chats.json"
    write_export(path, store.export_conversations([cid]), "json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    kept = doc["conversations"][0]["messages"][1]
    assert (kept["content"], kept["version"], [v["content"] for v in kept["versions"]]) == ("two", 1, ["one", "three"])
    assert "versions" not in doc["conversations"][0]["messages"][0]  # a question has none
    assert "answer 2 of 3" in to_markdown(store.export_conversations([cid]))
    with HistoryStore(tmp_path / "other.sqlite3") as other:
        other.import_conversations(list(read_import_file(path).conversations))
        (conv,) = other.list_conversations()
        shown = other.messages(conv.id)[-1]
        assert (shown.content, shown.version) == ("two", 1)
        assert shown.all_versions() == store.message(answer).all_versions()
        assert other.show_version(shown.id, 2).finish_reason == "length"


def test_export_and_import_keep_an_answers_later_turns_and_the_markdown_says_which_version(
        store: HistoryStore, tmp_path: Path) -> None:
    cid, ids = _chat(store, "q1", "a1", "q2", "a2")
    store.regenerate_answer(ids[1])
    store.finish_answer(ids[1], "a1 again", "stop")
    path = tmp_path / "chats.json"
    write_export(path, store.export_conversations([cid]), "json")
    answer = json.loads(path.read_text(encoding="utf-8"))["conversations"][0]["messages"][1]
    assert (answer["content"], answer["version"]) == ("a1 again", 1)
    assert [(t["role"], t["content"]) for t in answer["versions"][0]["later"]] == [("user", "q2"), ("assistant", "a2")]
    md = to_markdown(store.export_conversations([cid]))
    assert "answer 2 of 2 (the others, with the turns that followed them, are in the JSON export)" in md
    assert "q2" not in md  # the branch shown only
    with HistoryStore(tmp_path / "other.sqlite3") as other:
        other.import_conversations(list(read_import_file(path).conversations))
        (conv,) = other.list_conversations()
        assert _shown(other, conv.id) == ["q1", "a1 again"]
        other.show_version(other.messages(conv.id)[1].id, 0)
        assert _shown(other, conv.id) == ["q1", "a1", "q2", "a2"]


def _export_with(message: dict) -> bytes:
    return json.dumps({"format": "prefill-history", "version": 1, "conversations": [
        {"id": "c", "title": "t", "created_at": 1.0, "updated_at": 2.0, "messages": [message]}]}).encode()


ANSWER = {"role": "assistant", "content": "shown", "created_at": 1.0}


def test_an_export_without_versions_imports() -> None:
    (conv,) = parse_import(_export_with(ANSWER), Path("old.json")).conversations
    assert (conv.messages[0].versions, conv.messages[0].version) == ((), 0)


@pytest.mark.parametrize(("change", "words"), [
    ({"versions": "one"}, "messages[0].versions: expected a list, found text"),
    ({"versions": [{"content": 3}]}, "messages[0].versions[0].content: expected text, found a number"),
    ({"versions": [{"reasoning": "no content"}]}, 'messages[0].versions[0]: "content" is missing'),
    ({"versions": [{"content": "a", "complete": "yes"}]}, "versions[0].complete: expected true or false"),
    ({"versions": [{"content": "a", "figures": [1]}]}, "versions[0].figures: expected an object"),
    ({"versions": [{"content": "a"}], "version": 2}, "version: expected a whole number from 0 to 1, found 2"),
    ({"versions": [{"content": "a"}], "version": True}, "version: expected a whole number from 0 to 1"),
    ({"versions": [], "version": -1}, "expected a whole number from 0 to 0, found -1"),
    ({"role": "system", "versions": [{"content": "a"}]}, "only an answer or a question has versions, not a system"),
    ({"role": "user", "versions": [{"content": "a", "later": [{"role": "tool", "content": "x", "created_at": 1}]}]},
     "versions[0].later[0].role: expected one of system, user, assistant"),
    ({"versions": [{"content": "a"}] * 1000}, "messages[0].versions: more than 999 entries"),
])
def test_a_malformed_versions_field_is_refused_with_where_it_is(change: dict, words: str) -> None:
    with pytest.raises(ImportRejected) as refused:
        parse_import(_export_with({**ANSWER, **change}), Path("bad.json"))
    assert words in str(refused.value)


def test_versions_read_from_a_damaged_column_are_left_out(store: HistoryStore, db_path: Path) -> None:
    cid, answer = _chat_with_three_answers(store)
    store._db.execute("UPDATE messages SET versions = ?, version = 7 WHERE id = ?",
                      (json.dumps([{"content": "kept"}, 5, {"content": None}, "x"]), answer))
    shown = store.message(answer)
    assert (shown.versions, shown.version) == ((AnswerVersion("kept"),), 1)
