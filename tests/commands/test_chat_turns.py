"""The terminal chat's turns (commands/chat.py `chat_turns`) through a real ChatSession whose backend is
the scripted one (tests/scripted_backend.py): the conversation it keeps, its commands, compaction,
and what it prints. The terminal with a real model is tested in test_chat_terminal.py."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from prefill.commands.chat import chat_turns
from prefill.commands.chat_repl import Compact, Control, NewConversation, SetSystem
from prefill.engine.events import Finished
from prefill.engine.settings import OverflowSettings, SamplingSettings
from prefill.session.chat_session import ChatSession
from prefill.session.compaction import HEADING, INSTRUCTION, Summary, threshold
from prefill.session.conversation import Conversation
from tests.scripted_backend import Answer, ScriptedBackend

SAMPLING = SamplingSettings(temperature=0.0, max_tokens=512)


def session_of(model: ScriptedBackend) -> ChatSession:
    session = ChatSession()
    session.backend = model
    return session


def turns(model: ScriptedBackend, prompts: Iterable[str | Control], system: str = "Be brief.", echo: bool = False,
          policy: str = "rolling_window", n_ctx: int = 0, compactions: list[Summary] | None = None) -> list[Finished]:
    chat = Conversation(system, sampling=SAMPLING, overflow=OverflowSettings(policy=policy), n_ctx=n_ctx)
    return list(chat_turns(session_of(model), chat, prompts, echo, compactions=compactions))


def asked(model: ScriptedBackend, i: int) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in model.requests[i].messages]


def test_each_turn_is_asked_with_the_conversation_so_far() -> None:
    model = ScriptedBackend(["Hi.", "Tom."])
    ends = turns(model, ["Hello", "My cat's name?"])
    assert [(f.reason, f.text) for f in ends] == [("stop", "Hi."), ("stop", "Tom.")]
    assert asked(model, 1) == [("system", "Be brief."), ("user", "Hello"), ("assistant", "Hi."),
                               ("user", "My cat's name?")]
    assert model.requests[1].sampling == SAMPLING
    assert ends[1].metrics.cached_tokens == ends[0].metrics.prompt_tokens + 1  # last turn's prompt and answer


def test_clear_and_system_commands_change_what_the_next_turn_reads() -> None:
    model = ScriptedBackend()
    turns(model, ["One", NewConversation(), "Two", SetSystem("Be kind."), "Three", SetSystem(""), "Four"])
    assert asked(model, 1) == [("system", "Be brief."), ("user", "Two")]
    assert asked(model, 2)[0] == ("system", "Be kind.") and len(asked(model, 2)) == 4
    assert asked(model, 3)[0] == ("user", "Two")  # no system prompt at all


def test_a_turn_stopped_before_a_word_drops_its_question() -> None:
    model = ScriptedBackend([Answer(reason="cancelled"), "Yes."])
    ends = turns(model, ["Stopped", "Again"])
    assert ends[0].reason == "cancelled"
    assert asked(model, 1) == [("system", "Be brief."), ("user", "Again")]


def test_compact_folds_the_turns_into_a_summary_under_the_system_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedBackend(["Hi.", "Cat Tom.", "He is 3."])
    compactions: list[Summary] = []
    turns(model, ["My cat is Tom", Compact(), "How old?"], n_ctx=4096, compactions=compactions)
    assert asked(model, 1)[-1] == ("user", INSTRUCTION)
    assert asked(model, 2) == [("system", f"Be brief.\n\n{HEADING}\nCat Tom."), ("user", "How old?")]
    assert [(s.text, s.turns) for s in compactions] == [("Cat Tom.", 1)]
    assert "(1 earlier turn summarised:" in capsys.readouterr().err


def test_a_summarise_chat_whose_answer_passed_its_threshold_is_compacted_before_the_next_turn() -> None:
    n_ctx = 512  # threshold 352 tokens
    long = " ".join(["word"] * threshold(n_ctx))
    # A backend that cannot count a prompt (a remote's): the answer's own figures decide.
    model = ScriptedBackend([long, "Words.", "Fine."], counts_tokens=False)
    compactions: list[Summary] = []
    ends = turns(model, ["Talk", "And now?"], policy="summarise", n_ctx=n_ctx, compactions=compactions)
    assert len(model.requests) == 3 and asked(model, 1)[-1] == ("user", INSTRUCTION)
    assert asked(model, 2) == [("system", f"Be brief.\n\n{HEADING}\nWords."), ("user", "And now?")]
    assert [f.text for f in ends] == [long, "Fine."] and len(compactions) == 1

    model = ScriptedBackend([long, "Fine."], counts_tokens=False)
    turns(model, ["Talk", "And now?"], policy="rolling_window", n_ctx=n_ctx)
    assert len(model.requests) == 2  # another policy: never compacted


def test_a_next_turn_that_would_pass_the_threshold_compacts_the_chat_first() -> None:
    n_ctx = 512
    question = " ".join(["word"] * (threshold(n_ctx) - 128))  # with the 128 tokens kept for its answer
    model = ScriptedBackend(["Hi.", "Words.", "Fine."])
    turns(model, ["Hello", question], policy="summarise", n_ctx=n_ctx)
    assert asked(model, 1)[-1] == ("user", INSTRUCTION)
    assert asked(model, 2)[-1] == ("user", question)

    model = ScriptedBackend(["Hi.", "Fine."])
    turns(model, ["Hello", "Short."], policy="summarise", n_ctx=n_ctx)
    assert len(model.requests) == 2


def test_echo_prints_the_answer_on_stdout_and_the_thinking_dimmed_on_stderr(
        capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedBackend([Answer("It is \x1b[2Jfine.", thinking="Hmm.")])
    turns(model, ["How?"], echo=True)
    out, err = capsys.readouterr()
    assert out == "It is \\x1b[2Jfine."  # the model's escape sequence shown, never run
    assert err == "\x1b[2m[thinking] Hmm.\x1b[0m\n"


def test_an_answer_that_fails_midway_ends_the_turn_with_its_error() -> None:
    model = ScriptedBackend([Answer("Half an answer", fail_after=2, error="the server went away")])
    (end,) = turns(model, ["Go"])
    assert (end.reason, end.text, end.error) == ("error", "Half an ", "the server went away")
