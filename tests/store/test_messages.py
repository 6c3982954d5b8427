"""Messages: order, roles, automatic titles, edit and delete."""

from __future__ import annotations

import pytest

from prefill.store import HistoryStore, MessageNotFound, title_from_text


def _chat(store: HistoryStore, *texts: str) -> tuple[int, list[int]]:
    conv = store.create_conversation()
    roles = ["user", "assistant"]
    ids = [store.add_message(conv.id, roles[i % 2], t).id for i, t in enumerate(texts)]
    return conv.id, ids


def test_messages_come_back_in_order_with_their_fields(store: HistoryStore) -> None:
    conv = store.create_conversation()
    store.add_message(conv.id, "system", "rules")
    store.add_message(conv.id, "user", "question")
    answer = store.add_message(
        conv.id,
        "assistant",
        "answer",
        finish_reason="length",
        figures={"prompt_tokens": 12, "decode_tps": 41.5, "new_figure": "kept"},
    )
    got = store.messages(conv.id)
    assert [(m.role, m.content, m.position) for m in got] == [
        ("system", "rules", 0),
        ("user", "question", 1),
        ("assistant", "answer", 2),
    ]
    assert got[2] == answer
    assert answer.finish_reason == "length"
    assert answer.figures == {"prompt_tokens": 12, "decode_tps": 41.5, "new_figure": "kept"}
    assert all(m.complete for m in got)


def test_unknown_role_is_refused(store: HistoryStore) -> None:
    conv = store.create_conversation()
    with pytest.raises(ValueError, match="role"):
        store.add_message(conv.id, "tool", "x")
    assert store.messages(conv.id) == []


def test_first_user_message_names_a_new_chat(store: HistoryStore) -> None:
    conv = store.create_conversation()
    store.add_message(conv.id, "system", "system text is not a title")
    store.add_message(conv.id, "user", "Why is the sky blue?")
    store.add_message(conv.id, "user", "And why are sunsets red?")
    assert store.conversation(conv.id).title == "Why is the sky blue?"


def test_a_chat_with_its_own_title_keeps_it(store: HistoryStore) -> None:
    conv = store.create_conversation(title="Physics")
    store.add_message(conv.id, "user", "Why is the sky blue?")
    assert store.conversation(conv.id).title == "Physics"


def test_blank_first_message_leaves_the_default_title(store: HistoryStore) -> None:
    conv = store.create_conversation()
    store.add_message(conv.id, "user", "   \n ")
    assert store.conversation(conv.id).title == "New chat"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Hello\n\n  world  ", "Hello world"),
        ("x" * 48, "x" * 48),
        (
            "Explain how the key value cache grows with context length in llama.cpp",
            "Explain how the key value cache grows with…",
        ),
        ("a" * 100, "a" * 47 + "…"),
        ("", ""),
    ],
)
def test_title_from_text(text: str, expected: str) -> None:
    title = title_from_text(text)
    assert title == expected
    assert len(title) <= 48


def test_edit_keeps_the_old_words_and_what_followed_as_a_version(store: HistoryStore) -> None:
    conv_id, ids = _chat(store, "q1", "a1", "q2", "a2")
    other_id, other_ids = _chat(store, "other q", "other a")
    edited = store.edit_message(ids[0], "q1 edited")
    assert (edited.content, edited.version, [v.content for v in edited.all_versions()]) == (
        "q1 edited", 1, ["q1", "q1 edited"])
    assert [m.id for m in store.messages(conv_id)] == [ids[0]]  # the new version has nothing after it yet
    assert [t.content for t in edited.versions[0].later] == ["a1", "q2", "a2"]  # kept with the old words
    assert [m.id for m in store.messages(other_id)] == other_ids
    store.add_message(conv_id, "assistant", "a1 again")
    back = store.show_version(ids[0], 0)  # paged back: the old words, and their turns as messages again
    assert back.content == "q1" and back.version == 0
    assert [(m.role, m.content) for m in store.messages(conv_id)] == [
        ("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")]
    assert [t.content for t in back.versions[0].later] == ["a1 again"]  # and the new branch kept in turn
    store.show_version(ids[0], 1)
    assert [m.content for m in store.messages(conv_id)] == ["q1 edited", "a1 again"]


def test_edit_then_new_messages_follow_in_order(store: HistoryStore) -> None:
    conv_id, ids = _chat(store, "q1", "a1", "q2", "a2")
    store.edit_message(ids[2], "q2 edited")
    store.add_message(conv_id, "assistant", "a2 again")
    assert [m.content for m in store.messages(conv_id)] == ["q1", "a1", "q2 edited", "a2 again"]


def test_delete_one_message(store: HistoryStore) -> None:
    conv_id, ids = _chat(store, "q1", "a1", "q2")
    store.delete_message(ids[1])
    assert [m.id for m in store.messages(conv_id)] == [ids[0], ids[2]]
    with pytest.raises(MessageNotFound):
        store.message(ids[1])


def test_delete_messages_after_counts_what_it_removed(store: HistoryStore) -> None:
    conv_id, ids = _chat(store, "q1", "a1", "q2", "a2")
    assert store.delete_messages_after(ids[1]) == 2
    assert [m.id for m in store.messages(conv_id)] == ids[:2]
    assert store.delete_messages_after(ids[1]) == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.message(404),
        lambda s: s.edit_message(404, "x"),
        lambda s: s.delete_message(404),
        lambda s: s.delete_messages_after(404),
        lambda s: s.update_answer(404, "x"),
        lambda s: s.finish_answer(404, "x", "stop", {}),
    ],
)
def test_missing_message_raises_a_typed_error(store: HistoryStore, call) -> None:
    store.create_conversation()
    with pytest.raises(MessageNotFound) as info:
        call(store)
    assert info.value.message_id == 404
