"""Compaction (engine/prompt/compaction.py's rules, session/compaction.py's `summarise`) on the scripted backend:
when a chat is due, what the model is asked, what it reads afterwards, and when there is no summary. What
a real model writes is tested in tests/commands/test_chat_compaction.py and tests/server/test_compaction_api.py."""

from __future__ import annotations

import threading
from collections.abc import Generator

import pytest

from prefill.engine.chat_backend import Event
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import SamplingSettings
from prefill.session.compaction import (
    HEADING,
    INSTRUCTION,
    CompactionError,
    Summary,
    due,
    model_view,
    summarise,
    summary_tokens,
    system_with,
    threshold,
)
from tests.scripted_backend import Answer, ScriptedBackend, prompt_tokens

SYSTEM = Message("system", "Be brief.")
CHAT = (SYSTEM, Message("user", "My cat is Tom."), Message("assistant", "Hello Tom's friend."),
        Message("user", "He is 3."), Message("assistant", "Noted."))
N_CTX = 2048


def run(work: Generator[Event, None, Summary], events: list[Event] | None = None) -> Summary:
    """Drive a `summarise` generator to its end; its events go to `events`."""
    while True:
        try:
            ev = next(work)
        except StopIteration as done:
            return done.value
        if events is not None:
            events.append(ev)


def test_the_model_summarises_after_the_chat_itself_so_its_cache_is_the_prefix() -> None:
    model = ScriptedBackend(["Noted.", "Cat Tom, 3 years old."])
    asked = ChatRequest(CHAT[:4], SamplingSettings(temperature=0.7, max_tokens=900))
    list(model.stream(asked))  # the turn that answered "Noted."
    events: list[Event] = []
    summary = run(summarise(model.stream, ChatRequest(CHAT, asked.sampling), model.count_tokens, N_CTX), events)

    request = model.requests[-1]
    assert request.messages == (*CHAT, Message("user", INSTRUCTION))
    assert request.options.think is False and request.options.reasoning_budget == 0 and request.tools == ()
    assert request.sampling.temperature == 0.3 and request.sampling.max_tokens == summary_tokens(N_CTX) == 256
    assert request.overflow.policy == "rolling_window"
    prefill = next(e for e in events if isinstance(e, PrefillDone))
    assert prefill.cached_tokens == len(prompt_tokens(CHAT)) - 1  # all of the chat but its new answer marker
    assert isinstance(events[-1], Finished)

    assert summary.text == "Cat Tom, 3 years old." and (summary.folded, summary.turns) == (4, 2)
    assert summary.tokens_before == len(prompt_tokens([*CHAT, Message("user", "")]))
    assert summary.tokens_after == len(prompt_tokens([system_with("Be brief.", summary.text), Message("user", "")]))
    assert summary.written == len("Cat Tom, 3 years old.".split())
    assert summary.note == f"2 earlier turns summarised: {summary.tokens_before:,} tokens → {summary.tokens_after:,}"


def test_the_chat_goes_on_from_the_system_prompt_with_the_summary_under_it() -> None:
    later = [Message("user", "And his age?")]
    view = model_view("Be brief.", "Cat Tom.", [SYSTEM, *later])
    assert view == [Message("system", f"Be brief.\n\n{HEADING}\nCat Tom."), *later]
    assert model_view("", "  Cat Tom. ", later) == [Message("system", f"{HEADING}\nCat Tom."), *later]
    assert model_view("Be brief.", "", later) == [SYSTEM, *later]
    assert model_view("", "", later) == later


def test_a_chat_is_due_past_its_threshold_with_the_summarise_policy_only() -> None:
    assert threshold(8192) == int(0.85 * 8192)
    assert threshold(512) == 512 - summary_tokens(512) - 96  # a small context keeps room to summarise
    assert due("summarise", threshold(4096), 4096) and not due("summarise", threshold(4096) - 1, 4096)
    assert not due("rolling_window", 4096, 4096) and not due("summarise", 10, 0)


def test_nothing_to_fold_asks_the_model_nothing() -> None:
    model = ScriptedBackend()
    with pytest.raises(CompactionError, match="nothing to summarise"):
        run(summarise(model.stream, ChatRequest(CHAT[:2]), model.count_tokens, N_CTX))
    assert model.requests == []


@pytest.mark.parametrize(("answer", "said"), [
    (Answer("   "), "wrote no summary"),
    (Answer("Cat Tom.", reason="cancelled"), "was stopped"),
])
def test_no_summary_leaves_the_chat_as_it_was(answer: Answer, said: str) -> None:
    model = ScriptedBackend([answer])
    with pytest.raises(CompactionError, match=said):
        run(summarise(model.stream, ChatRequest(CHAT), model.count_tokens, N_CTX))


def test_stop_while_it_summarises() -> None:
    cancel = threading.Event()
    model = ScriptedBackend([Answer("Cat Tom, three years old, likes fish.")], pause_after=2)
    work = summarise(model.stream, ChatRequest(CHAT), model.count_tokens, N_CTX, cancel)
    threading.Thread(target=lambda: (model.paused.wait(30), cancel.set())).start()
    with pytest.raises(CompactionError, match="was stopped"):
        run(work)
