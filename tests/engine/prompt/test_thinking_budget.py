"""A thinking budget: N thoughts, the close in the model's own format, then the answer, in both
decode loops (the chat engine's, the batch scheduler's), for three families of reasoning models."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.batch.slot_chat import SlotChat
from prefill.engine.events import Finished, Token
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.prompt.reasoning import ReasoningSyntax
from prefill.engine.prompt.thinking_budget import (
    EFFORT_BUDGETS,
    NOTE,
    ThinkingBudget,
    ThinkingLimit,
    budget_of,
    close_text,
)
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.engine.settings import LoadSettings, SamplingSettings
from tests.engine.budget_thinkers import FAMILIES, BudgetThinker, write_budget_thinker
from tests.engine.vocab_models import Vocab, vocab_dir

HOT = SamplingSettings(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0, max_tokens=96, seed=3)
LOAD = LoadSettings(n_ctx=512, n_gpu_layers="none")
THINK = ReasoningSyntax((("<think>", "</think>"),))


# --- the budget alone, on text --------------------------------------------------------------------
def _tokenize(text: str) -> list[int]:
    return [ord(c) for c in text]  # a character a token


def run(budget: ThinkingBudget, script: list[str], steps: int = 60) -> str:
    """Decode `script`'s pieces in turn, the budget's forced tokens in their place when it has some."""
    out, i = [], 0
    for _ in range(steps):
        tok = budget.forced()
        if tok is not None:
            piece, forced = chr(tok), True
        elif i < len(script):
            piece, forced, i = script[i], False, i + 1
        else:
            break
        budget.saw(piece, forced)
        out.append(piece)
    return "".join(out)


def test_the_budget_closes_the_thinking_after_n_thoughts() -> None:
    b = ThinkingBudget(ThinkingLimit(2, THINK, ("<think>", "</think>")), _tokenize)
    text = run(b, ["one ", "two ", "three ", "</think>", "Answer"])
    assert text.startswith("one two " + close_text("</think>"))
    assert (b.used, b.closed) == (2, True)


def test_a_thinking_opened_again_after_the_budget_is_closed_at_once() -> None:
    b = ThinkingBudget(ThinkingLimit(1, THINK), _tokenize)
    text = run(b, ["<think>", "a ", "b ", "<think>", "c"])
    # "<think>" counts as the first thought (it begins the thinking), so the close comes at once
    assert text.count("</think>") == 2 and "a " not in text.split("</think>")[0]


def test_no_budget_spent_outside_the_thinking() -> None:
    b = ThinkingBudget(ThinkingLimit(1, THINK), _tokenize)
    assert run(b, ["Plain ", "answer ", "text."]) == "Plain answer text." and not b.closed


def test_effort_maps_to_a_budget_where_the_template_does_not_read_it() -> None:
    assert budget_of(TemplateOptions(reasoning_effort="low"), takes_reasoning_effort=False) == EFFORT_BUDGETS["low"]
    assert budget_of(TemplateOptions(reasoning_effort="low"), takes_reasoning_effort=True) is None
    assert budget_of(TemplateOptions(reasoning_effort="low", reasoning_budget=7), False) == 7
    with pytest.raises(ValueError, match="reasoning budget"):
        TemplateOptions(reasoning_budget=-1)


# --- real tokenizers and templates, scripted weights ------------------------------------------------
@pytest.fixture(scope="module", params=sorted(FAMILIES))
def thinker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> BudgetThinker:
    return write_budget_thinker(tmp_path_factory.mktemp("budget") / f"{request.param}.gguf", request.param)


@pytest.fixture(scope="module")
def engine(thinker: BudgetThinker) -> Iterator[ChatEngine]:
    e = ChatEngine.load(thinker.path, LOAD)
    yield e
    e.close()


@pytest.fixture(scope="module")
def slots(thinker: BudgetThinker) -> Iterator[SlotChat]:
    sched = BatchScheduler(load_batch_model(thinker.path, LOAD, 2))
    yield SlotChat(sched)
    sched.close()


def answer(chat: ChatEngine | SlotChat, options: TemplateOptions) -> tuple[str, str, Finished]:
    events = list(chat.stream(ChatRequest.of([Message("user", "What is 2+2?")], HOT, options=options)))
    fin = events[-1]
    assert isinstance(fin, Finished)
    thought = "".join(e.text for e in events if isinstance(e, Token) and e.reasoning)
    return thought, "".join(e.text for e in events if isinstance(e, Token) and not e.reasoning), fin


def text_of(thinker: BudgetThinker, tokens: list[int]) -> str:
    v = Vocab(vocab_dir() / f"ggml-vocab-{thinker.family.vocab}.gguf")
    try:
        return "".join(v.piece(t) for t in tokens)
    finally:
        v.close()


@pytest.mark.parametrize("loop", ["engine", "slots"])
@pytest.mark.parametrize("budget", [3, 5])
def test_a_budget_of_n_stops_the_thinking_at_n_then_the_answer_follows(
    request: pytest.FixtureRequest, thinker: BudgetThinker, loop: str, budget: int
) -> None:
    chat = request.getfixturevalue(loop)
    thought, said, fin = answer(chat, TemplateOptions(think=True, reasoning_budget=budget))
    opened_by_model = 1 if thinker.family.opens else 0  # its opening's last token begins the thinking
    assert fin.reasoning.startswith(text_of(thinker, thinker.thoughts[: budget - opened_by_model]).strip())
    assert fin.reasoning.endswith(NOTE) and thinker.family.thinking.strip() not in fin.reasoning
    assert (said, fin.text, fin.reason) == (thinker.family.answer, thinker.family.answer, "stop")
    # N thoughts and the close; the blank after the closing tag counts as the answer's where it is a token of its own
    assert budget + len(thinker.close) - 1 <= fin.metrics.reasoning_tokens <= budget + len(thinker.close)
    assert thought.strip() == fin.reasoning


def test_without_a_budget_the_whole_thinking_is_written(request: pytest.FixtureRequest, thinker: BudgetThinker) -> None:
    if not thinker.closes_itself:
        pytest.skip("this script's thinking closes only where a budget closes it")
    _thought, said, fin = answer(request.getfixturevalue("engine"), TemplateOptions(think=True))
    assert thinker.family.thinking.strip() in fin.reasoning and said == thinker.family.answer


def test_a_budget_of_zero_means_no_thinking(engine: ChatEngine, thinker: BudgetThinker) -> None:
    if thinker.family.vocab == "gemma-4":
        pytest.skip("this script opens its thinking only where the template asks for it")
    _thought, said, fin = answer(engine, TemplateOptions(reasoning_budget=0))
    assert said == thinker.family.answer
    if engine.format.takes_thinking_switch:  # the template is told not to think: nothing to close
        assert (fin.reasoning, fin.metrics.reasoning_tokens) == ("", 0)
        assert "</think>" in engine.render([Message("user", "q")], TemplateOptions(reasoning_budget=0))
    else:  # the prompt opened the thinking: it is closed before the first thought
        assert fin.reasoning == NOTE and len(thinker.close) - 1 <= fin.metrics.reasoning_tokens <= len(thinker.close)


def test_the_terminal_takes_a_budget_and_says_it_in_json(tmp_path: Path) -> None:
    thinker = write_budget_thinker(tmp_path / "command-r.gguf", "command-r")
    base = [sys.executable, "-m", "prefill", "chat", "--model", str(thinker.path), "--ctx", "512",
            "--gpu-layers", "none", "--prompt", "What is 2+2?", "--json"]
    done = subprocess.run([*base, "--reasoning-budget", "4"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout.strip().splitlines()[-1])
    assert (row["reasoning_budget"], row["answer"]) == (4, "It is 4!") and row["reasoning"].endswith(NOTE)
    bad = subprocess.run([*base, "--reasoning-budget", "-3"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "thinking budget is 0 to" in bad.stderr
