"""The renderer is bounded (issue 33): past a budget a source is folded, in the whole-message path
(``render_markdown``) and the streaming one (``MarkdownStream``), and the cut does not depend on how
the source arrived."""

from __future__ import annotations

import random

import pytest
from PySide6.QtGui import QTextDocument

from prefill.ui.markdown import fold
from prefill.ui.markdown.fold import SHOWN_COST, Fold, break_long_lines, cost
from prefill.ui.markdown.rich_text import render_markdown
from prefill.ui.markdown.stream import MarkdownStream

ROW = "|" + "|".join(str(c % 10) for c in range(64)) + "|\n"
TABLE = "|" + "|".join(f"c{c}" for c in range(64)) + "|\n|" + "-|" * 64 + "\n" + ROW * 10_000
LINE = "a long line of words " * 200_000  # 4.2 MB, no line break
BOUND = 3 * SHOWN_COST  # characters a folded text may show, its note and markup included


def _chunked(f: Fold, text: str, rnd: random.Random) -> str:
    out, at = [], 0
    while at < len(text):
        step = rnd.randint(1, 50)
        out.append(f.feed(text[at : at + step]))
        at += step
    return "".join(out)


def test_the_cut_depends_on_the_source_not_on_its_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    rnd = random.Random(7)
    for _ in range(2_000):
        text = "".join(rnd.choice("ab |\n ") for _ in range(rnd.randint(0, 300)))
        budget = rnd.randint(0, 200)
        monkeypatch.setattr(fold, "SLACK", rnd.randint(1, 40))
        whole = Fold(budget)
        shown = whole.feed(text)
        pieces = Fold(budget)
        assert _chunked(pieces, text, rnd) == shown and text.startswith(shown)
        assert whole.hidden == pieces.hidden == len(text) - len(shown)
        assert whole.hidden_lines == pieces.hidden_lines == text[len(shown) :].count("\n")
        assert shown == _rule(text, budget, fold.SLACK)


def _rule(text: str, budget: int, slack: int) -> str:
    """The cut, spelled out: the longest prefix within the budget, then its line to its end within the slack."""
    k = 0
    while k < len(text) and cost(text[: k + 1]) <= budget:
        k += 1
    if k in (0, len(text)) or text[k - 1] == "\n":
        return text[:k]
    j = k
    while j < len(text) and cost(text[k : j + 1]) <= slack:
        j += 1
        if text[j - 1] == "\n":
            break
    return text[:j]


def test_a_table_ends_on_a_whole_row_and_a_line_is_cut() -> None:
    f = Fold()
    shown = f.feed(TABLE)
    assert shown.endswith("|\n") and 2 < shown.count("\n") < 20  # a few rows of 64 cells
    assert f.hidden == len(TABLE) - len(shown) and f.hidden_lines == TABLE.count("\n") - shown.count("\n")
    g = Fold()
    assert SHOWN_COST <= len(g.feed(LINE)) <= SHOWN_COST + fold.SLACK
    assert Fold(None).feed(LINE) == LINE


@pytest.mark.parametrize("text", [TABLE, LINE], ids=["table", "line"])
def test_render_markdown_is_bounded_and_says_what_it_left_out(qapp, text: str) -> None:
    html = render_markdown(text)
    assert len(html) < 40 * BOUND  # the table's markup is ~40 characters a cell
    doc = QTextDocument()
    doc.setHtml(html)
    shown = doc.toPlainText()
    assert len(shown) < BOUND and shown.endswith("more characters" + shown.split("more characters")[-1])
    assert "not shown." in shown.splitlines()[-1]


@pytest.mark.parametrize("text", [TABLE, LINE], ids=["table", "line"])
def test_a_streamed_answer_stays_bounded_and_ends_as_the_one_shot_render(qapp, text: str) -> None:
    doc = QTextDocument()
    stream = MarkdownStream(doc)
    for at in range(0, len(text), 64 * 1024):
        stream.append(text[at : at + 64 * 1024])
        assert doc.characterCount() < BOUND
    stream.finish()
    assert stream.text == text and stream.folded > len(text) - BOUND
    expected = QTextDocument()
    expected.setHtml(render_markdown(text))
    assert doc.toPlainText() == expected.toPlainText()


def test_long_lines_are_broken_for_display_only() -> None:
    shown, run = break_long_lines("abcdefg\nxy", 3)
    assert (shown, run) == ("abc\ndef\ng\nxy", 2)
    shown, run = break_long_lines("zz", 3, run=2)  # a piece that continues a line already 2 long
    assert (shown, run) == ("z\nz", 1)
    assert break_long_lines("ab\ncd", 3) == ("ab\ncd", 2)
