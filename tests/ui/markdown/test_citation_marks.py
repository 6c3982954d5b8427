"""An answer's citation marks in the renderer: a mark that points at a source given is a cite:N link, in
the theme's link colour; a mark that points at none, a mark in code, an index (a[1]) and every mark of
an answer without sources stay text."""

from __future__ import annotations

import re

from prefill.ui.markdown.rich_text import DARK_CODE, BlockRenderer, split_blocks

ANSWER = "Paris has 2.1 million people [1]. The tower is tall [2][7]. Both agree [1, 7]."


def render(text: str, cites: set[int], palette=None) -> str:
    r = BlockRenderer(palette, cites=frozenset(cites))
    return "".join(r.render(b) for b in split_blocks(text))


def hrefs(html: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', html)


def test_marks_that_point_at_a_source_are_links_and_the_others_text() -> None:
    html = render(ANSWER, {1, 2})
    assert hrefs(html) == ["cite:1", "cite:2", "cite:1"]
    assert '<a href="cite:1"' in html and ">[1]</a>" in html  # a single mark: the whole mark is the link
    assert "</a>[7]" in html  # [7] points at no source: plain text right after the [2] link
    assert re.search(r'\[<a href="cite:1"[^>]*>1</a>, 7\]', html)  # in a group, only the number given


def test_marks_take_the_themes_link_colour() -> None:
    assert f'href="cite:1" style="color:{DARK_CODE.link}"' in render("Yes [1].", {1}, DARK_CODE)


def test_an_answer_without_sources_has_no_mark_as_a_link() -> None:
    html = render(ANSWER, set())
    assert hrefs(html) == [] and "[1]" in html and "[2][7]" in html


def test_a_mark_in_code_or_right_after_a_word_is_no_citation() -> None:
    html = render("Index a[1] and `x[1]` here.\n\n```python\ny = [1]\n```\n", {1})
    assert "cite:" not in html and "a[1]" in html


def test_a_markdown_link_labelled_with_a_number_stays_that_link() -> None:
    html = render("See [1](https://example.com/a) and [1].", {1})
    assert hrefs(html) == ["https://example.com/a", "cite:1"]


def test_a_line_of_open_brackets_and_digits_is_text() -> None:
    line = "[1 " * 20_000 + "[1,2," * 5_000 + "]"  # one "]": every "[" before it is tried as a mark
    html = render(line, {1, 2})
    assert "cite:" not in html and html.count("[1") == 25_000
