"""Markdown to safe Qt rich text: escaping, links, code, lists, quotes, tables."""

from __future__ import annotations

import re

import pytest
from PySide6.QtGui import QTextDocument

from prefill.ui.markdown.rich_text import (
    DARK_CODE,
    LIGHT_CODE,
    BlockSplitter,
    code_blocks,
    is_safe_url,
    render_markdown,
    split_blocks,
)
from tests.ui.steps import growth


def _doc(html: str) -> QTextDocument:
    doc = QTextDocument()
    doc.setHtml(html)
    return doc


def _hrefs(html: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', html)


def test_html_in_model_output_is_shown_as_text(qapp) -> None:
    text = "Hi <script>alert(1)</script> and <b>not bold</b> & <img src=x onerror=y>"
    html = render_markdown(text)
    assert "<script" not in html and "<b>" not in html and "<img" not in html
    assert _doc(html).toPlainText() == text


def test_html_inside_code_is_escaped_too(qapp) -> None:
    html = render_markdown("`<b>x</b>`\n\n```html\n<script>alert(1)</script>\n```")
    assert "<script" not in html and "<b>x" not in html
    assert "<script>alert(1)</script>" in _doc(html).toPlainText()


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", "file:///etc/passwd",
            "copy:0", "relative/path"],
)
def test_unsafe_links_are_not_clickable(qapp, url: str) -> None:
    html = render_markdown(f"click [here]({url}) now")
    assert _hrefs(html) == []
    assert url in _doc(html).toPlainText()  # shown as the text the model wrote
    assert not is_safe_url(url)


def test_safe_links_are_clickable(qapp) -> None:
    html = render_markdown("see [docs](https://example.com/a_(b)?q=1&r=2), <mailto:a@b.c> "
                           "and https://example.org/x.")
    assert _hrefs(html) == ["https://example.com/a_(b)?q=1&amp;r=2", "mailto:a@b.c",
                            "https://example.org/x"]
    assert _doc(html).toPlainText() == "see docs, mailto:a@b.c and https://example.org/x."


def test_images_are_never_loaded(qapp) -> None:
    html = render_markdown("![a cat](https://example.com/cat.png) ![x](javascript:alert(1))")
    assert "<img" not in html.lower()
    assert _hrefs(html) == ["https://example.com/cat.png"]
    assert "[image: a cat]" in _doc(html).toPlainText()


def test_python_fence_is_highlighted_inside_a_pre(qapp) -> None:
    html = render_markdown("```python\ndef f(x):\n    return 'hi'\n```")
    pre = re.search(r"<pre[^>]*>(.*)</pre>", html, re.DOTALL)
    assert pre is not None
    assert re.search(r'<span style="color: #[0-9A-Fa-f]{3,6}[^"]*">def</span>', pre.group(1))
    doc = _doc(html)
    assert "def f(x):\n    return 'hi'" in doc.toPlainText()
    block = doc.findBlock(doc.toPlainText().index("def"))
    assert block.begin().fragment().charFormat().foreground().color().name() != "#000000"


def test_unknown_language_is_plain_monospace(qapp) -> None:
    html = render_markdown("```nosuchlang\na < b\n```")
    pre = re.search(r"<pre[^>]*>(.*)</pre>", html, re.DOTALL)
    assert pre is not None and pre.group(1) == "a &lt; b"
    doc = _doc(html)
    block = doc.findBlock(doc.toPlainText().index("a < b"))
    assert block.begin().fragment().charFormat().fontFamilies() == list(LIGHT_CODE.mono_fonts)


def test_copy_links_and_code_blocks_agree(qapp) -> None:
    text = ("One:\n```python\nprint(1)\n```\ntext\n\n> quoted:\n> ```\n> q = 2\n> ```\n\n"
            "- item\n\n    ```sh\n    ls -l\n    ```\n~~~\nlast\n\n\n~~~")
    html = render_markdown(text)
    assert _hrefs(html) == ["copy:0", "copy:1", "copy:2", "copy:3"]
    assert code_blocks(text) == ["print(1)", "q = 2", "ls -l", "last\n\n"]


def test_unclosed_fence_at_the_end_is_still_a_block(qapp) -> None:
    text = "```js\nlet a = 1;\n\nlet b"
    assert code_blocks(text) == ["let a = 1;\n\nlet b"]
    assert "copy:0" in render_markdown(text)


def test_nested_lists(qapp) -> None:
    doc = _doc(render_markdown("1. one\n2. two\n   - a *b*\n     1. deep\n   - c\n3. three"))
    seen = []
    block = doc.begin()
    while block.isValid():
        lst = block.textList()
        seen.append((block.text(), lst.format().indent(), lst.itemText(block)))
        block = block.next()
    assert seen == [("one", 1, "1."), ("two", 1, "2."), ("a b", 2, "."), ("deep", 3, "1."),
                    ("c", 2, "."), ("three", 1, "3.")]


def test_ordered_list_keeps_its_start_number(qapp) -> None:
    doc = _doc(render_markdown("4. four\n5. five"))
    assert doc.begin().textList().itemText(doc.begin()) == "4."


def test_headings_emphasis_and_line_breaks(qapp) -> None:
    html = render_markdown("## Title ##\n**bold** *it* _it2_ ***both*** ~~gone~~ snake_case_name\n"
                           "second \\*line\\*")
    assert "<h2>Title</h2>" in html
    for tag in ("<b>bold</b>", "<i>it</i>", "<i>it2</i>", "<i><b>both</b></i>", "<s>gone</s>"):
        assert tag in html
    assert "snake_case_name" in html and "<br/>" in html
    doc = _doc(html)
    assert doc.begin().blockFormat().headingLevel() == 2
    assert doc.toPlainText().endswith("second *line*")


def test_blockquote_and_rule(qapp) -> None:
    html = render_markdown("> quoted **text**\n> # inner\n\n---\nafter")
    assert html.startswith("<blockquote") and "<h1>inner</h1>" in html and "<hr/>" in html
    assert _doc(html).toPlainText().split("\n")[:2] == ["quoted text", "inner"]


def test_table(qapp) -> None:
    html = render_markdown("| name | n |\n|:-----|--:|\n| `a` | 1 |\n| b |")
    assert html.count("<tr>") == 3 and "<th" in html and 'align="right"' in html
    doc = _doc(html)
    # Qt puts an empty block before a table that starts the document.
    assert doc.toPlainText().lstrip("\n").split("\n")[:6] == ["name", "n", "a", "1", "b", ""]


def test_a_table_is_rows_under_caption_names_without_a_grid(qapp) -> None:
    from PySide6.QtGui import QTextTable

    from prefill.ui.widgets.tokens import TYPE

    doc = _doc(render_markdown("| name | n |\n|---|--:|\n| a | 1 |\n| b | 2 |", DARK_CODE))
    (table,) = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert table.format().border() == 0  # no frame and no grid: each row has a hairline under it
    cells = [table.cellAt(r, c).format().toTableCellFormat() for r in range(3) for c in range(2)]
    assert all(f.bottomBorder() == 1 and f.leftBorder() == f.rightBorder() == f.topBorder() == 0 for f in cells)
    assert {f.bottomBorderBrush().color().name() for f in cells} == {DARK_CODE.rule}
    name = table.cellAt(0, 0).firstCursorPosition().charFormat()
    assert name.font().pixelSize() == TYPE.caption and name.foreground().color().name() == DARK_CODE.muted


def test_dark_palette_changes_the_colours(qapp) -> None:
    text = "```python\nx = 'a'\n```"
    light, dark = render_markdown(text, LIGHT_CODE), render_markdown(text, DARK_CODE)
    assert LIGHT_CODE.background in light and DARK_CODE.background in dark
    assert light != dark


def test_splitter_is_independent_of_chunking() -> None:
    text = "# H\npara one\nstill\n\n```py\na\n\nb\n```\n- x\n- y\n\n\n> q\n---\nend"
    whole = split_blocks(text)
    assert whole == ["# H", "para one\nstill", "```py\na\n\nb\n```", "- x\n- y", "> q", "---",
                     "end"]
    splitter = BlockSplitter()
    parts: list[str] = []
    for ch in text:
        parts += splitter.feed(ch)[0]
    assert parts + splitter.close() == whole


def test_render_work_grows_linearly_with_a_long_answer(qapp) -> None:
    """Counted, not timed (speed: benchmarks/markdown_stream_bench.py): 4x the answer, about 4x the work."""
    block = ("Some *text* with `code` and [a link](https://x.org).\n\n"
             "```python\nfor i in range(3):\n    print(i)\n```\n\n")
    assert growth(lambda n: block * n, lambda t: render_markdown(t, budget=None), 50) <= 1.25
    assert render_markdown(block * 800, budget=None).count("copy:") == 800
