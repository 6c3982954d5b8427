"""The window's ConversationHooks (ui/chat/answer_store.py) write the chat to a real history through
StoreProxy: a question, an answer as it streams and when it ends, a failed one, a summary."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.engine.events import Finished, MetricsSnapshot
from prefill.engine.message import Message, ToolCall
from prefill.engine.prompt.compaction import Summary
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.session.conversation import Compacted, ConversationHooks, Said, Turn
from prefill.session.tool_loop import ToolCallDone
from prefill.store import HistoryStore, MessageRecord, SettingsFile
from prefill.ui.chat.answer_store import SAVE_EVERY_S, AnswerStore
from prefill.ui.workers.store_worker import StoreProxy, Stores


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[StoreProxy]:
    p = StoreProxy(Stores(HistoryStore(tmp_path / "history.sqlite3"), SettingsFile(tmp_path / "s.json")))
    yield p
    p.stop()


def settle(qtbot, proxy: StoreProxy) -> None:
    """Wait until every store call made so far has run and come back."""
    done: list[bool] = []
    proxy.after_pending(lambda: done.append(True))
    qtbot.waitUntil(lambda: bool(done) and proxy.pending() == 0, timeout=10_000)


def read(qtbot, proxy: StoreProxy, cid: int) -> list[MessageRecord]:
    got: list = []
    proxy.read_messages(cid, then=got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    return got[0].messages


def new_chat(qtbot, proxy: StoreProxy) -> int:
    made: list = []
    proxy.create_conversation("chat", then=made.append)
    qtbot.waitUntil(lambda: bool(made), timeout=10_000)
    return made[0].id


def turn(budget: int | None = None) -> Turn:
    return Turn(ChatRequest((Message("user", "What is two and two?"),),
                            options=TemplateOptions(reasoning_budget=budget)))


def test_the_window_store_is_the_services_hooks(qtbot, proxy: StoreProxy) -> None:
    hooks: ConversationHooks = AnswerStore(proxy, lambda: None, lambda _m: None)
    for name in ("added", "answer_grew", "answer_finished", "summary_made", "dropped"):
        assert callable(getattr(hooks, name)), name


def test_a_question_and_its_answer_are_kept_as_it_streams_and_whole_when_it_ends(qtbot, proxy: StoreProxy) -> None:
    cid = new_chat(qtbot, proxy)
    clock, ids = Clock(), []
    store = AnswerStore(proxy, lambda: cid, lambda _m: None, clock)
    store.added(Said(Message("user", "What is two and two?")), then=lambda m: ids.append(m.id))
    t = turn(budget=64)
    store.begin(then=ids.append)
    settle(qtbot, proxy)
    assert len(ids) == 2 and store.answer is not None and store.answer.answer_id == ids[1]

    t.grow("Two and", "Fo")
    store.answer_grew(t)  # under half a second since it began: not written yet
    settle(qtbot, proxy)
    assert read(qtbot, proxy, cid)[1].content == ""
    clock.now += SAVE_EVERY_S
    store.answer_grew(t)
    settle(qtbot, proxy)
    saved = read(qtbot, proxy, cid)[1]
    assert (saved.content, saved.reasoning, saved.complete) == ("Fo", "Two and", False)

    call = ToolCall("c1", "add", '{"a": 2, "b": 2}')
    t.calls.append(ToolCallDone(call, "4", False, 0.25, round=1))
    t.finish(Finished("stop", "Four.", MetricsSnapshot(prompt_tokens=12, completion_tokens=3), "Two and two."))
    store.answer_finished(t)
    settle(qtbot, proxy)
    question, answer = read(qtbot, proxy, cid)
    assert (question.role, question.content) == ("user", "What is two and two?")
    assert (answer.content, answer.reasoning, answer.finish_reason, answer.complete) == (
        "Four.", "Two and two.", "stop", True)
    assert answer.figures["prompt_tokens"] == 12 and answer.figures["reasoning_budget"] == 64
    assert answer.figures["tool_calls"] == [{"id": "c1", "tool": "add", "arguments": '{"a": 2, "b": 2}',
                                             "elapsed_ms": 250.0, "is_error": False, "denied": False,
                                             "stopped": False, "not_run": False, "round": 1, "result": "4"}]
    assert store.answer is None


def test_an_answer_that_ends_before_its_message_is_made_is_still_written(qtbot, proxy: StoreProxy) -> None:
    cid = new_chat(qtbot, proxy)
    store = AnswerStore(proxy, lambda: cid, lambda _m: None)
    t = turn()
    store.begin()
    t.finish(Finished("stop", "Quick."))  # before begin_answer came back
    store.answer_finished(t)
    store.begin()  # the next answer begins at once: the first still finds its own message
    settle(qtbot, proxy)
    first, second = read(qtbot, proxy, cid)
    assert (first.content, first.complete) == ("Quick.", True)
    assert (second.content, second.complete) == ("", False)


def test_an_answer_that_ended_before_its_message_was_made_is_writing_until_its_writes_are_asked(
        qtbot, proxy: StoreProxy) -> None:
    cid = new_chat(qtbot, proxy)
    store = AnswerStore(proxy, lambda: cid, lambda _m: None)
    t = turn()
    store.begin()
    t.finish(Finished("stop", "Quick."))
    store.answer_finished(t)  # before begin_answer came back: its write waits for the message's id
    assert store.writing  # a regenerate asked now would move that message unfinished: the edits wait
    seen: list[bool] = []
    proxy.after_pending(lambda: seen.append(store.writing))  # as MessageEdits waits
    settle(qtbot, proxy)
    assert seen == [False] and not store.writing
    assert read(qtbot, proxy, cid)[0].content == "Quick."


def test_a_failed_answer_leaves_no_message(qtbot, proxy: StoreProxy) -> None:
    cid = new_chat(qtbot, proxy)
    store = AnswerStore(proxy, lambda: cid, lambda _m: None)
    store.added(Said(Message("user", "hello")))
    t = turn()
    store.begin()
    t.fail("the model went away")
    store.answer_finished(t)
    settle(qtbot, proxy)
    assert [(m.role, m.content) for m in read(qtbot, proxy, cid)] == [("user", "hello")]


def test_a_failed_new_version_gives_way_to_the_one_shown_before(qtbot, proxy: StoreProxy) -> None:
    cid = new_chat(qtbot, proxy)
    restored: list[MessageRecord] = []
    store = AnswerStore(proxy, lambda: cid, restored.append)
    store.added(Said(Message("user", "hello")))
    first = turn()
    store.begin()
    first.finish(Finished("stop", "Hi there."))
    store.answer_finished(first)
    settle(qtbot, proxy)
    mid = read(qtbot, proxy, cid)[1].id

    again = turn()
    store.begin(regenerating=mid, shown=0)
    again.fail("out of memory")
    store.answer_finished(again)
    settle(qtbot, proxy)
    assert [(m.id, m.content, len(m.versions)) for m in restored] == [(mid, "Hi there.", 0)]
    answer = read(qtbot, proxy, cid)[1]
    assert (answer.content, answer.versions) == ("Hi there.", ())


def test_a_summary_is_kept_as_a_system_message_with_its_figures(qtbot, proxy: StoreProxy) -> None:
    cid = new_chat(qtbot, proxy)
    kept: list[MessageRecord] = []
    store = AnswerStore(proxy, lambda: cid, lambda _m: None)
    summary = Summary("They said hello.", 4, 2, 1900, 210, 35.0, 12)
    store.summary_made(Compacted(summary.text, summary), then=kept.append)
    settle(qtbot, proxy)
    (m,) = read(qtbot, proxy, cid)
    assert (m.role, m.content, m.figures) == ("system", "They said hello.", {"compaction": summary.as_dict()})
    assert kept and kept[0].id == m.id


def test_nothing_is_written_without_a_chat(qtbot, proxy: StoreProxy) -> None:
    store = AnswerStore(proxy, lambda: None, lambda _m: None)
    store.added(Said(Message("user", "hello")))
    store.summary_made(Compacted("text"))
    store.begin()
    assert proxy.pending() == 0
