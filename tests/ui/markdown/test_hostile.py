"""Hostile answers: nesting is bounded, no input is slow, a renderer failure shows plain text."""

from __future__ import annotations

import re

import pytest
from PySide6.QtGui import QTextDocument

from prefill.ui.chat.transcript.message_widget import MessageWidget
from prefill.ui.markdown import rich_text as markdown
from prefill.ui.markdown.rich_text import MAX_DEPTH, BlockRenderer, render_markdown
from prefill.ui.markdown.stream import MarkdownStream
from prefill.ui.markdown.text_faults import HOSTILE_MARKDOWN, fault_battery, fault_battery_lines
from tests.ui.steps import growth


def _max_nesting(html: str, tag: str) -> int:
    depth = deepest = 0
    for m in re.finditer(rf"<(/?){tag}\b", html):
        depth += -1 if m.group(1) else 1
        deepest = max(deepest, depth)
    return deepest


def test_400_nested_quotes_render_and_nest_at_most_max_depth(qapp) -> None:
    one_line = ">" * 400 + " deep"
    staircase = "\n".join(">" * k + f" level {k}" for k in range(1, 401))
    for text in (one_line, staircase):
        html = render_markdown(text, budget=None)  # RecursionError before
        assert _max_nesting(html, "blockquote") == MAX_DEPTH
    doc = QTextDocument()
    doc.setHtml(render_markdown(staircase, budget=None))
    lines = doc.toPlainText().split("\n")
    assert lines[0] == "level 1" and lines[-1] == "level 400"  # the deeper levels are shown, flat


def test_a_history_message_of_nested_quotes_is_shown(qtbot) -> None:
    w = MessageWidget("assistant")
    qtbot.addWidget(w)
    w.set_content(">" * 400 + " from history")
    assert w.browser.toPlainText() == "from history"
    assert not w.body.plain


def test_deep_lists_nest_at_most_max_depth(qapp) -> None:
    text = "\n".join("  " * k + f"- item {k}" for k in range(100))
    html = render_markdown(text, budget=None)
    assert _max_nesting(html, "ul") == MAX_DEPTH
    doc = QTextDocument()
    doc.setHtml(html)
    assert doc.toPlainText().split("\n") == [f"item {k}" for k in range(100)]


def test_wide_table_is_a_paragraph(qapp) -> None:
    cols = markdown.MAX_TABLE_COLUMNS + 1
    text = "a|b\n" + "|-" * cols + "\n" + "|\n" * 50
    assert "<table" not in render_markdown(text)
    assert "<table" in render_markdown("a|b\n|-|-\n|\n")


@pytest.mark.parametrize("name", list(HOSTILE_MARKDOWN))
def test_hostile_answer_renders_in_linear_time(qapp, name: str) -> None:
    """Work counted, not timed (figures: benchmarks/markdown_hostile_bench.py).

    At 40,000 characters the quadratic patterns took seconds to minutes (``***a ``:
    ~10 s; ``[``: ~8 s). 4x the input must take at most ~4x the Python steps (16x is quadratic).
    """
    assert growth(HOSTILE_MARKDOWN[name], render_markdown, 2_000) <= 1.25
    assert "<img" not in render_markdown(HOSTILE_MARKDOWN[name](40_000))


def test_emphasis_still_works(qapp) -> None:
    html = render_markdown("**a *b* c** and *x **y** z* _u_ __v__ ~~w~~ a*b*c 2*3*4 snake_case")
    for tag in ("<b>a <i>b</i> c</b>", "<i>x <b>y</b> z</i>", "<i>u</i>", "<b>v</b>", "<s>w</s>",
                "a<i>b</i>c"):
        assert tag in html
    assert "snake_case" in html


def test_unclosed_and_mismatched_markup_stays_text(qapp) -> None:
    cases = {"**open": "**open", "`` a `": "`` a `", "[label](": "[label](", "a ~~b": "a ~~b",
             "<http://x": "<http://x", "*a **b": "*a **b"}
    for source, shown in cases.items():
        doc = QTextDocument()
        doc.setHtml(render_markdown(source))
        assert doc.toPlainText() == shown, source


def _broken_render(self: BlockRenderer, block: str, depth: int = 0) -> str:
    if "boom" in block:
        raise RuntimeError("a renderer bug")
    return "<p>rendered</p>"


def test_a_render_failure_shows_the_message_as_plain_text(qapp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BlockRenderer, "render", _broken_render)
    text = "first **block**\n\nboom <img src=\"/dev/zero\">\n\nlast"
    doc = QTextDocument()
    doc.setHtml(render_markdown(text))
    assert doc.toPlainText() == text

    shown = QTextDocument()
    stream = MarkdownStream(shown)
    stream.set_text(text)  # from history
    assert stream.plain and shown.toPlainText() == text

    streamed = QTextDocument()
    stream = MarkdownStream(streamed)
    for part in ("first **block**\n\n", "boom\n\n", "and ", "more"):
        stream.append(part)  # streaming: plain from the failing block on, the whole answer
    stream.finish()
    assert stream.plain and streamed.toPlainText() == "first **block**\n\nboom\n\nand more"

    stream.set_text("fine")  # the next answer in this document renders again
    assert not stream.plain and streamed.toPlainText() == "rendered"


def test_fault_battery_lists_what_the_user_sees(qapp) -> None:
    records = fault_battery(2_000)
    assert len(list(fault_battery_lines(1_000))) == len(records)
    faults = {r["fault"]: r for r in records}
    assert {f"markdown:{n}" for n in HOSTILE_MARKDOWN} <= set(faults)
    assert all(r["images"] == 0 and not r["plain_fallback"] for r in records if "images" in r)
    assert faults["label:img_dev_zero"]["shows"] == '<img src="/dev/zero">'
    assert faults["label:img_dev_zero"]["tooltip_shows"] == '<img src="/dev/zero">'
    assert faults["link:label_hides_target"]["asks_before_opening"]
    assert "https://evil.example/login" in faults["link:label_hides_target"]["question"]
    assert not faults["link:bare_url"]["asks_before_opening"]
