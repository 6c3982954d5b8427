"""The reasoning parser on streams of each supported format, fed in pieces that split the tags."""

from __future__ import annotations

import pytest

from prefill.engine.prompt.reasoning import (
    ANSWER,
    REASONING,
    THINK_PAIRS,
    ReasoningParser,
    ReasoningSyntax,
    detect_syntax,
    opened_in_prompt,
)

ALL_PAIRS = ReasoningSyntax(THINK_PAIRS)
HARMONY = ReasoningSyntax((), channels=True)


def run(parser: ReasoningParser, chunks: list[str]) -> tuple[str, str, list[str]]:
    """Feed `chunks`; return (reasoning, answer, the kinds in order of arrival)."""
    got: dict[str, list[str]] = {REASONING: [], ANSWER: []}
    order: list[str] = []
    for c in chunks:
        for kind, text in parser.feed(c):
            got[kind].append(text)
            if not order or order[-1] != kind:
                order.append(kind)
    for kind, text in parser.flush():
        got[kind].append(text)
    return "".join(got[REASONING]), "".join(got[ANSWER]), order


def every_split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 100])
@pytest.mark.parametrize("open_, close", THINK_PAIRS)
def test_tag_pairs_split_across_tokens(open_: str, close: str, size: int) -> None:
    stream = f"{open_}\nTwo and two: count them. <b>not a tag</b>\n{close}\n\nThe answer is 4 < 5."
    reasoning, answer, order = run(ReasoningParser(ALL_PAIRS), every_split(stream, size))
    assert reasoning == "Two and two: count them. <b>not a tag</b>\n"
    assert answer == "The answer is 4 < 5."
    assert order == [REASONING, ANSWER]


@pytest.mark.parametrize("size", [1, 4, 100])
def test_prompt_that_opened_the_thinking(size: int) -> None:
    syntax = ReasoningSyntax((("<think>", "</think>"),))
    opened = opened_in_prompt(syntax, "<|user|>hi<|assistant|><think>\n")
    assert opened == ("<think>", "</think>")
    reasoning, answer, _ = run(ReasoningParser(syntax, opened), every_split("Hmm, a greeting.</think>Hello!", size))
    assert (reasoning, answer) == ("Hmm, a greeting.", "Hello!")


def test_prompt_that_closed_the_thinking_starts_in_the_answer() -> None:
    syntax = ReasoningSyntax((("<think>", "</think>"),))
    assert opened_in_prompt(syntax, "assistant\n<think>\n\n</think>\n\n") is None


@pytest.mark.parametrize("size", [1, 3, 6, 1000])
def test_gpt_oss_channels(size: int) -> None:
    stream = (
        "<|channel|>analysis<|message|>User says hi. Reply briefly."
        "<|start|>assistant<|channel|>final<|message|>Hi there! Use <|x|> freely."
    )
    reasoning, answer, order = run(ReasoningParser(HARMONY), every_split(stream, size))
    assert reasoning == "User says hi. Reply briefly."
    assert answer == "Hi there! Use <|x|> freely."
    assert order == [REASONING, ANSWER]


def test_gpt_oss_analysis_after_start_header() -> None:
    stream = "<|start|>assistant<|channel|>analysis<|message|>think<|start|>assistant<|channel|>final<|message|>done"
    reasoning, answer, _ = run(ReasoningParser(HARMONY), every_split(stream, 2))
    assert (reasoning, answer) == ("think", "done")


def test_no_syntax_passes_everything_through() -> None:
    stream = "<think>literal</think> text"
    reasoning, answer, _ = run(ReasoningParser(ReasoningSyntax()), every_split(stream, 1))
    assert (reasoning, answer) == ("", stream)


def test_unfinished_tag_at_the_end_is_text() -> None:
    reasoning, answer, _ = run(ReasoningParser(ALL_PAIRS), ["Answer ends with <thi"])
    assert (reasoning, answer) == ("", "Answer ends with <thi")


def test_thinking_cut_off_by_the_length_limit_stays_reasoning() -> None:
    reasoning, answer, _ = run(ReasoningParser(ALL_PAIRS), ["<think>step one, step tw"])
    assert (reasoning, answer) == ("step one, step tw", "")


def test_detect_syntax_from_template_or_vocabulary() -> None:
    none = detect_syntax("{{ messages }}", lambda t: False)
    assert not none
    from_template = detect_syntax("{% if '</think>' in content %}", lambda t: False)
    assert from_template.pairs == (("<think>", "</think>"),)
    from_vocab = detect_syntax("", lambda t: t in ("[THINK]", "[/THINK]"))
    assert from_vocab.pairs == (("[THINK]", "[/THINK]"),)
    harmony = detect_syntax("<|channel|>analysis<|message|><|start|>", lambda t: False)
    assert harmony.channels
