"""The conversation service (session/conversation.py) on the scripted backend: the request of each
turn, a turn's events and the messages it leaves, compaction, regenerate / edit / branch, and the
storage hooks. Qt-free and without llama.cpp; the window and the terminal are its adapters."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from prefill.engine.events import Finished, MetricsSnapshot, Token
from prefill.engine.message import ImagePart, Message, ToolCall
from prefill.engine.request import ChatRequest, TemplateOptions, Tool
from prefill.engine.settings import OverflowSettings, SamplingSettings
from prefill.session.compaction import HEADING, INSTRUCTION, CompactionError, Summary, threshold
from prefill.session.conversation import (
    Compacted,
    Conversation,
    ConversationBusy,
    Item,
    Said,
    Source,
    Turn,
)
from prefill.session.tool_loop import Decision, LoopEvent, LoopFinished, ToolCallDone, ToolCallStarted
from tests.scripted_backend import Answer, ScriptedBackend, tool_call

SAMPLING = SamplingSettings(temperature=0.0, max_tokens=256)
CLOCK = Tool("clock", "The time now.", {"type": "object", "properties": {}})


@dataclass
class Result:
    text: str
    is_error: bool = False


class Recorder:
    """Hooks that write down what they hear, in order."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str]] = []

    def added(self, item: Item) -> None:
        self.heard.append(("added", _said(item)))

    def answer_grew(self, turn: Turn) -> None:
        self.heard.append(("grew", turn.text))

    def answer_finished(self, turn: Turn) -> None:
        self.heard.append(("finished", turn.state))

    def summary_made(self, item: Compacted) -> None:
        self.heard.append(("summary", item.text))

    def dropped(self, items: Sequence[Item]) -> None:
        self.heard.append(("dropped", " | ".join(_said(i) for i in items)))


def _said(item: Item) -> str:
    return f"summary:{item.text}" if isinstance(item, Compacted) else f"{item.role}:{item.message.content}"


def chat(**kw: object) -> Conversation:
    return Conversation("Be brief.", sampling=SAMPLING, **kw)


def ask(conv: Conversation, model: ScriptedBackend, text: str, **kw: object) -> tuple[Turn, list[LoopEvent]]:
    turn = conv.ask(text)
    return turn, list(conv.run(turn, model.stream, **kw))


def roles(conv: Conversation) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in conv.messages()]


def test_each_request_is_the_chat_as_the_model_reads_it_with_the_chats_settings() -> None:
    options = TemplateOptions(think=True, reasoning_budget=64)
    overflow = OverflowSettings(policy="summarise")
    conv = chat(options=options, overflow=overflow, tools=(CLOCK,))
    model = ScriptedBackend(["Hi.", "Tom."])
    ask(conv, model, "Hello")
    conv.add_summary("The user said hello.")
    ask(conv, model, "My cat's name?")
    first, second = model.requests
    assert first.messages == (Message("system", "Be brief."), Message("user", "Hello"))
    assert second.messages == (Message("system", f"Be brief.\n\n{HEADING}\nThe user said hello."),
                               Message("user", "My cat's name?"))
    assert (second.sampling, second.overflow, second.options, second.tools) == (SAMPLING, overflow, options, (CLOCK,))
    # Every message stays in the chat; only the model's view starts at the summary.
    assert roles(conv) == [("user", "Hello"), ("assistant", "Hi."), ("user", "My cat's name?"), ("assistant", "Tom.")]
    assert isinstance(conv.items[2], Compacted)


def test_a_question_with_images_carries_them_and_no_system_prompt_sends_none() -> None:
    image = ImagePart(b"\x89PNG", "image/png", 1, 1)
    conv = Conversation(sampling=SAMPLING)
    turn = conv.ask("What is this?", [image])
    assert turn.request.messages == (Message("user", "What is this?", images=(image,)),)
    assert turn.question is turn.request.messages[-1]


def test_a_turn_streams_its_events_and_leaves_its_answer_in_the_chat_with_the_hooks_told_in_order() -> None:
    hooks = Recorder()
    conv = chat(hooks=hooks)
    model = ScriptedBackend([Answer("Fine thanks.", thinking="Hmm.")])
    turn = conv.ask("How are you?")
    assert conv.busy and conv.turn is turn and turn.state == "waiting"
    seen: list[tuple[str, bool]] = []
    for ev in conv.run(turn, model.stream):
        if isinstance(ev, Token):
            seen.append((turn.text, conv.busy))
    assert seen[-1] == ("Fine thanks.", True) and seen[0] == ("", True)  # the thinking streamed first
    assert not conv.busy and conv.turn is None and turn.state == "done"
    assert (turn.text, turn.reasoning) == ("Fine thanks.", "Hmm.")
    assert conv.items[-1] == Said(Message("assistant", "Fine thanks.", "Hmm."))
    assert hooks.heard == [("added", "user:How are you?"), ("grew", ""), ("grew", "Fine "), ("grew", "Fine thanks."),
                           ("added", "assistant:Fine thanks."), ("finished", "done")]


def test_a_tool_round_keeps_the_calls_and_their_results_before_the_answer() -> None:
    call = tool_call("clock")
    conv = chat(tools=(CLOCK,))
    model = ScriptedBackend([Answer("Let me look.", tool_calls=(call,)), "It is noon."])
    asked: list[ToolCall] = []

    def approve(c: ToolCall) -> Decision:
        asked.append(c)
        return Decision.ALLOW_ONCE

    turn, events = ask(conv, model, "Time?", run_tool=lambda c, _cancel: Result("12:00"), approve=approve)
    assert asked == [call]
    assert [type(e) for e in events if isinstance(e, ToolCallStarted | ToolCallDone | LoopFinished)] == [
        ToolCallStarted, ToolCallDone, LoopFinished]
    assert [(c.call, c.text) for c in turn.calls] == [(call, "12:00")]
    assert conv.messages()[1:] == [Message("assistant", "Let me look.", tool_calls=(call,)),
                                   Message("tool", "12:00", tool_call_id=call.id, name="clock"),
                                   Message("assistant", "It is noon.")]
    assert model.requests[1].messages[-1] == Message("tool", "12:00", tool_call_id=call.id, name="clock")
    assert turn.text == "It is noon." and turn.state == "done"


def test_a_cancelled_answer_keeps_what_it_had() -> None:
    cancel = threading.Event()
    conv = chat()
    model = ScriptedBackend(["One two three four."])
    turn = conv.ask("Count")
    for ev in conv.run(turn, model.stream, cancel=cancel):
        if isinstance(ev, Token) and ev.n_tokens == 2:
            cancel.set()  # the stream ends before its next token
    assert turn.state == "cancelled" and not conv.busy
    assert roles(conv) == [("user", "Count"), ("assistant", "One two ")]


def test_a_question_stopped_before_a_word_goes_so_the_roles_still_alternate() -> None:
    hooks = Recorder()
    conv = chat(hooks=hooks)
    model = ScriptedBackend([Answer(reason="cancelled"), "Yes."])
    turn, _ = ask(conv, model, "Stopped")
    assert turn.state == "cancelled" and conv.items == []
    assert hooks.heard[-2:] == [("dropped", "user:Stopped"), ("finished", "cancelled")]
    ask(conv, model, "Again")
    assert model.requests[1].messages == (Message("system", "Be brief."), Message("user", "Again"))


def test_a_backend_that_fails_leaves_the_question_and_a_failed_turn() -> None:
    hooks = Recorder()
    conv = chat(hooks=hooks)
    model = ScriptedBackend([Answer(raises=RuntimeError("the model is gone"))])
    turn = conv.ask("Hello")
    with pytest.raises(RuntimeError, match="gone"):
        list(conv.run(turn, model.stream))
    assert (turn.state, turn.error, conv.busy) == ("failed", "the model is gone", False)
    assert roles(conv) == [("user", "Hello")] and hooks.heard[-1] == ("finished", "failed")
    retry = conv.again()
    assert retry.question is None and retry.request.messages[-1] == Message("user", "Hello")


def test_a_turn_whose_events_are_left_unread_ends_and_frees_the_chat() -> None:
    conv = chat()
    model = ScriptedBackend(["One two three."])
    turn = conv.ask("Count")
    events = conv.run(turn, model.stream)
    next(events)
    events.close()  # the reader went away mid-answer
    assert (turn.state, conv.busy, conv.turn) == ("cancelled", False, None)
    assert roles(conv) == [("user", "Count")]
    ask(conv, model, "Again")  # the chat takes another turn


def test_nothing_changes_the_chat_while_its_turn_runs() -> None:
    conv = chat()
    conv.add(Message("user", "Hi"))
    conv.add(Message("assistant", "Hello."))
    conv.ask("Next")
    for change in (lambda: conv.ask("Another"), conv.again, conv.regenerate, conv.clear,
                   lambda: conv.edit(0, "Hey")):
        with pytest.raises(ConversationBusy):
            change()


def test_an_answer_keeps_the_sources_its_turn_cites() -> None:
    conv = chat()
    turn = conv.ask("Where?")
    turn.sources = (Source("notes.md", "line 3", "Tom is a cat."),)
    list(conv.run(turn, ScriptedBackend(["In the notes."]).stream))
    last = conv.items[-1]
    assert isinstance(last, Said) and last.sources == turn.sources and last.message.content == "In the notes."
    assert isinstance(conv.items[0], Said) and conv.items[0].sources == ()


def _finished(prompt: int, completion: int) -> Finished:
    return Finished("stop", "", MetricsSnapshot(prompt_tokens=prompt, completion_tokens=completion))


def test_compaction_is_due_after_an_answer_past_the_threshold_with_the_summarise_policy_only() -> None:
    n_ctx = 512
    at = threshold(n_ctx)
    conv = chat(overflow=OverflowSettings(policy="summarise"), n_ctx=n_ctx)
    assert conv.due_after(_finished(at - 10, 10)) and not conv.due_after(_finished(at - 10, 9))
    assert not chat(overflow=OverflowSettings(policy="rolling_window"), n_ctx=n_ctx).due_after(_finished(at, 10))
    assert not chat(overflow=OverflowSettings(policy="summarise")).due_after(_finished(at, 10))  # n_ctx unknown


def test_compaction_is_due_before_a_question_that_would_pass_the_threshold() -> None:
    n_ctx = 512
    model = ScriptedBackend(["Hi."])
    conv = chat(overflow=OverflowSettings(policy="summarise"), n_ctx=n_ctx)
    long = Message("user", " ".join(["word"] * (threshold(n_ctx) - 128)))  # 128 kept for its answer
    assert not conv.due_before(long, model.count_tokens)  # nothing to fold yet
    ask(conv, model, "Hello")
    assert conv.due_before(long, model.count_tokens)
    assert not conv.due_before(Message("user", "Short."), model.count_tokens)
    assert not conv.due_before(long, ScriptedBackend(counts_tokens=False).count_tokens)  # cannot count: not due
    conv.add_summary("Hello said.")
    assert not conv.due_before(long, model.count_tokens)  # nothing after the summary to fold


def test_compact_has_the_model_summarise_and_the_next_turn_reads_the_summary() -> None:
    hooks = Recorder()
    conv = chat(hooks=hooks, n_ctx=4096)
    model = ScriptedBackend(["Hi.", "Cat Tom.", "He is 3."])
    ask(conv, model, "My cat is Tom")
    work = conv.compact(model.stream, model.count_tokens)
    with pytest.raises(StopIteration) as done:
        while True:
            next(work)
    summary = done.value.value
    assert isinstance(summary, Summary) and (summary.text, summary.turns) == ("Cat Tom.", 1)
    assert model.requests[1].messages[-1] == Message("user", INSTRUCTION)
    assert conv.items[-1] == Compacted("Cat Tom.", summary)
    assert hooks.heard[-2:] == [("added", "summary:Cat Tom."), ("summary", "Cat Tom.")]
    ask(conv, model, "How old?")
    assert model.requests[2].messages == (Message("system", f"Be brief.\n\n{HEADING}\nCat Tom."),
                                          Message("user", "How old?"))


def test_compact_with_nothing_to_fold_leaves_the_chat_as_it_was() -> None:
    conv = chat(n_ctx=4096)
    conv.add(Message("user", "Hello"))
    with pytest.raises(CompactionError):
        list(conv.compact(ScriptedBackend().stream, ScriptedBackend().count_tokens))
    assert roles(conv) == [("user", "Hello")] and conv.last_summary() == -1


def test_regenerate_drops_the_last_answer_with_its_tool_round_and_asks_the_chat_again() -> None:
    call = tool_call("clock")
    hooks = Recorder()
    conv = chat(tools=(CLOCK,), hooks=hooks)
    model = ScriptedBackend(["Hi.", Answer(tool_calls=(call,)), "Noon.", "It is twelve."])
    ask(conv, model, "Hello")
    ask(conv, model, "Time?", run_tool=lambda c, _cancel: Result("12:00"), approve=lambda c: Decision.ALLOW_ONCE)
    dropped = conv.regenerate()
    assert [_said(i) for i in dropped] == ["assistant:", "tool:12:00", "assistant:Noon."]
    assert hooks.heard[-1] == ("dropped", "assistant: | tool:12:00 | assistant:Noon.")
    turn = conv.again()
    list(conv.run(turn, model.stream))
    assert model.requests[-1].messages[-1] == Message("user", "Time?")
    assert roles(conv)[-2:] == [("user", "Time?"), ("assistant", "It is twelve.")]
    assert conv.regenerate() and conv.regenerate() == []  # a chat ending with a question has no answer to drop


def test_edit_replaces_a_question_and_returns_what_followed_it() -> None:
    conv = chat()
    model = ScriptedBackend(["Hi.", "Tom.", "Rex."])
    ask(conv, model, "Hello")
    ask(conv, model, "My cat?")
    dropped = conv.edit(2, "My dog?")
    assert [_said(i) for i in dropped] == ["assistant:Tom."]
    list(conv.run(conv.again(), model.stream))
    assert roles(conv) == [("user", "Hello"), ("assistant", "Hi."), ("user", "My dog?"), ("assistant", "Rex.")]
    with pytest.raises(ValueError):
        conv.edit(1, "Not a question")


def test_branch_copies_the_chat_up_to_a_message_and_asks_the_same_way() -> None:
    options = TemplateOptions(reasoning_budget=32)
    conv = chat(options=options, n_ctx=2048)
    model = ScriptedBackend(["Hi.", "Tom."])
    ask(conv, model, "Hello")
    ask(conv, model, "My cat?")
    copy = conv.branch(1)
    assert [_said(i) for i in copy.items] == ["user:Hello", "assistant:Hi."]
    assert (copy.system, copy.options, copy.sampling, copy.n_ctx) == ("Be brief.", options, SAMPLING, 2048)
    copy.add(Message("user", "Other"))
    assert len(conv.items) == 4  # the original is untouched


def test_clear_starts_over_with_the_same_system_prompt() -> None:
    conv = chat()
    model = ScriptedBackend(["Hi.", "Again."])
    ask(conv, model, "Hello")
    conv.add_summary("Said hello.")
    conv.clear()
    ask(conv, model, "Hello again")
    assert model.requests[-1] == ChatRequest((Message("system", "Be brief."), Message("user", "Hello again")), SAMPLING)
