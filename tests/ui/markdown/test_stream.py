"""MarkdownStream: streaming an answer block by block gives the one-shot document."""

from __future__ import annotations

import random

import pytest
from PySide6.QtGui import QTextDocument

from prefill.ui.markdown.rich_text import code_blocks, render_markdown
from prefill.ui.markdown.stream import MarkdownStream

_WORDS = ["the", "model", "**token**", "cache", "`kv`", "layer", "*attention*", "weights",
          "prefill", "decode", "batch"]


def sample_answer(n_chars: int, seed: int = 1) -> str:
    """A chat answer of about ``n_chars``: headings, paragraphs, code fences, lists, quotes, tables.

    Also used by ``benchmarks/markdown_stream_bench.py``.
    """
    rnd = random.Random(seed)
    code = "\n".join(f"def f{j}(x):\n    return x * {j}  # <tag>" for j in range(8))
    kinds = [
        lambda i: f"## Section {i}\n\n",
        lambda i: " ".join(rnd.choices(_WORDS, k=60)) + "\nsee [docs](https://example.com/a).\n\n",
        lambda i: f"```python\n{code}\n```\n\n",
        lambda i: "1. first *item*\n2. second\n   - nested `code`\n   - more\n3. third\n\n",
        lambda i: "> quoted **text**\n> more\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n",
        lambda i: "Intro:\n```\nplain <b> code\n\n  with a blank line\n```\nAfter code.\n\n",
        lambda i: "# Title\n" + " ".join(rnd.choices(_WORDS, k=30)) + "\n---\n",
    ]
    parts: list[str] = []
    total = 0
    while total < n_chars:
        parts.append(kinds[len(parts) % len(kinds)](len(parts)))
        total += len(parts[-1])
    return "".join(parts)


def _structure(doc: QTextDocument) -> list[tuple[str, int, str | None]]:
    """Each block's text, heading level and list marker: what a reader sees."""
    out = []
    block = doc.begin()
    while block.isValid():
        lst = block.textList()
        marker = lst.itemText(block) if lst else None
        out.append((block.text(), block.blockFormat().headingLevel(), marker))
        block = block.next()
    return out


def _one_shot(text: str, budget: int | None = None) -> QTextDocument:
    doc = QTextDocument()
    doc.setHtml(render_markdown(text, budget=budget))
    return doc


def _stream(text: str, chunk: int, budget: int | None = None) -> tuple[QTextDocument, MarkdownStream]:
    """Streamed in pieces of ``chunk``; unbounded unless ``budget`` (the folding is tested apart)."""
    doc = QTextDocument()
    stream = MarkdownStream(doc, budget=budget)
    for i in range(0, len(text), chunk):
        stream.append(text[i : i + chunk])
    stream.finish()
    return doc, stream


def test_long_streamed_answer_equals_one_shot_render(qapp) -> None:
    text = sample_answer(80_000)
    assert len(text) >= 80_000 and text.count("```") > 200
    doc, stream = _stream(text, 30)
    expected = _one_shot(text)
    assert doc.toPlainText() == expected.toPlainText()
    assert _structure(doc) == _structure(expected)
    assert stream.text == text
    assert stream.code_blocks == code_blocks(text)


@pytest.mark.parametrize("chunk", [1, 7, 64])
@pytest.mark.parametrize(
    "text",
    [
        "# T\npara\n- a\n  - b\n- c",
        "- a\n\n- b\n\n| a | b |\n|--|--|\n|1|2|\n\n1. x\n\n> q\n\n# h",
        "p\n\n```\nc\n```\n\n- a\n\n| a | b |\n|--|--|\n|1|2|\n\nend",
        "a\n\n\n\nb\n\n",
        "#\n\nx",
        "```py\nan open fence\n\nstill open",
        "",
    ],
)
def test_chunking_does_not_change_the_document(qapp, text: str, chunk: int) -> None:
    doc, _ = _stream(text, chunk)
    expected = _one_shot(text)
    assert doc.toPlainText() == expected.toPlainText()
    assert _structure(doc) == _structure(expected)


def test_heading_keeps_its_level_when_it_arrives_alone(qapp) -> None:
    doc = QTextDocument()
    stream = MarkdownStream(doc)
    for part in ["Intro.\n\n", "## Sec", "tion\n", "after"]:
        stream.append(part)
    stream.finish()
    assert _structure(doc) == [("Intro.", 0, None), ("Section", 2, None), ("after", 0, None)]


def test_tail_is_plain_until_its_block_completes(qapp) -> None:
    doc = QTextDocument()
    stream = MarkdownStream(doc)
    stream.append("Some **bold")
    assert doc.toPlainText() == "Some **bold"
    stream.append("** text\n\nnext")
    assert doc.toPlainText() == "Some bold text\nnext"
    assert stream.text == "Some **bold** text\n\nnext"


def test_open_fence_tail_is_monospace(qapp) -> None:
    doc = QTextDocument()
    stream = MarkdownStream(doc)
    stream.append("Look:\n```python\nx = 1\n")
    assert doc.begin().text() == "Look:"  # the text before the fence is committed
    assert "```" not in doc.toPlainText()  # the fence's line is markup: the code shows alone
    block = doc.findBlockByNumber(1)
    assert block.text() == "x = 1"
    assert block.begin().fragment().charFormat().fontFixedPitch()
    assert "monospace" in block.begin().fragment().charFormat().fontFamilies()
    assert not doc.begin().begin().fragment().charFormat().fontFixedPitch()


def test_set_text_renders_history_in_full(qapp) -> None:
    text = sample_answer(3_000, seed=2)
    doc = QTextDocument()
    stream = MarkdownStream(doc)
    stream.append("old partial **answer")
    stream.set_text(text)
    assert stream.finished
    assert stream.text == text
    assert _structure(doc) == _structure(_one_shot(text))


def test_append_after_finish_reopens_the_answer(qapp) -> None:
    doc = QTextDocument()
    stream = MarkdownStream(doc)
    stream.set_text("# Title\nfirst")
    stream.append(" and more\n\n**end**")
    assert not stream.finished
    assert stream.text == "# Title\nfirst and more\n\n**end**"
    assert doc.toPlainText() == "Title\nfirst and more\n**end**"  # the tail is plain again
    stream.finish()
    assert _structure(doc) == _structure(_one_shot(stream.text))

