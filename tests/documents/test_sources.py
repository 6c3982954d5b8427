"""Numbered sources for the prompt, and citations read back: a mark that points at nothing is no source."""

from __future__ import annotations

from prefill.documents.search import Passage
from prefill.documents.sources import CITATION_RULE, cited, number_passages, sources_block, stray_marks
from tests.documents.embedders import count_words


def _p(cid: int, text: str, page: int | None = None, file: str = "/d/report.pdf") -> Passage:
    return Passage(cid, file, page, 0, len(text), "", text, 1.0 / cid)


def test_passages_are_numbered_once_each_and_labelled() -> None:
    srcs = number_passages([_p(1, "Alpha text.", 3), _p(2, "Beta text.", None, "/d/notes.md"), _p(1, "Alpha text.", 3)])
    assert [(s.n, s.label, s.location) for s in srcs] == [
        (1, "[1] report.pdf, page 3", "/d/report.pdf, page 3"), (2, "[2] notes.md", "/d/notes.md")]
    block = sources_block(srcs)
    assert block.startswith(CITATION_RULE)
    assert block.endswith("[1] report.pdf, page 3\nAlpha text.\n\n[2] notes.md\nBeta text.")
    assert sources_block([]) == ""


def test_a_budget_keeps_the_passages_that_fit_whole() -> None:
    rule = count_words(CITATION_RULE)
    srcs = number_passages([_p(1, "one two three"), _p(2, "four five six seven"), _p(3, "x")], count_words,
                           rule + 8)
    assert [s.n for s in srcs] == [1]  # "[1] report.pdf" and its three words: 5; the next would make 11
    assert number_passages([_p(1, "one")], count_words, rule) == []  # the rule alone fills it


def _floor4(text: str) -> int:
    """Four characters a token, rounded down: a text counts more than the sum of its parts' counts."""
    return len(text) // 4


def test_the_block_put_in_never_passes_the_budget_rule_and_labels_included() -> None:
    passages = [_p(i, " ".join(f"word{i}x{j}" for j in range(i % 7 + 1)), i % 3 or None) for i in range(1, 30)]
    for count in (count_words, _floor4):
        whole = count(sources_block(number_passages(passages)))
        for budget in range(0, whole + 20, 3):
            srcs = number_passages(passages, count, budget)
            assert count(sources_block(srcs)) <= budget
            if count is count_words and len(srcs) < len(passages):  # (words add up) as many as fit
                assert count(sources_block(number_passages(passages[:len(srcs) + 1]))) > budget
        assert len(number_passages(passages, count, whole)) == len(passages)


def test_numbering_may_start_after_sources_given_before_and_its_labels_are_counted() -> None:
    passages = [_p(i, "alpha beta") for i in range(1, 4)]
    srcs = number_passages(passages, first=9)
    assert [s.label for s in srcs] == ["[9] report.pdf", "[10] report.pdf", "[11] report.pdf"]
    # one character a token: "[10]" and "[11]" are a character wider than "[2]" and "[3]", and that counts
    budget = len(sources_block(number_passages(passages))) + 2
    assert len(number_passages(passages, len, budget, first=1)) == 3
    assert len(number_passages(passages, len, budget, first=9)) == 2


def test_cited_keeps_only_marks_that_point_at_a_source() -> None:
    srcs = number_passages([_p(1, "a"), _p(2, "b"), _p(3, "c")])
    answer = "It opened in 1847 [2]. It closes in winter [1, 3][2]. Pumps use panels [7]. See [0]."
    assert [s.n for s in cited(answer, srcs)] == [2, 1, 3]
    assert stray_marks(answer, srcs) == [7, 0]


def test_indexes_and_code_are_not_citations() -> None:
    srcs = number_passages([_p(1, "a"), _p(2, "b")])
    answer = "Use `xs[1]` or list[2] here.\n```py\nys[1]\n[2]\n```\nBut this [1] is one."
    assert [s.n for s in cited(answer, srcs)] == [1]
    assert cited("No sources cited.", srcs) == [] and cited("[1]", []) == []
