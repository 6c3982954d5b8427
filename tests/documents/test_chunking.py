"""Passages cut by structure: headings, pages, sizes in tokens, overlap, exact spans."""

from __future__ import annotations

import re

import pytest

from prefill.documents.chunking import ChunkSizes, chunk_document
from prefill.documents.readers.base import Document
from tests.documents.embedders import count_words


def _doc() -> Document:
    d = Document("markdown")
    d.add("heading", "Guide", level=1)
    d.add("paragraph", "Short intro.")
    d.add("heading", "Install", level=2)
    d.add("paragraph", " ".join(f"Sentence {i} says a few words." for i in range(30)))
    d.add("code", "\n".join(f"line_{i} = {i}" for i in range(40)))
    d.add("heading", "Use", level=2)
    d.add("table", "a | b\n1 | 2")
    d.add("heading", "Appendix", level=1)
    d.add("paragraph", "Last words.")
    return d


def test_spans_are_exact_and_heading_paths_follow_levels() -> None:
    doc = _doc()
    chunks = chunk_document(doc, count_words, ChunkSizes(max_tokens=40, overlap=10))
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text
        assert c.tokens <= 40
    assert chunks[0].heading == ("Guide",) and chunks[0].text == "Short intro."
    assert {c.heading for c in chunks[1:-2]} == {("Guide", "Install")}
    assert chunks[-2].heading == ("Guide", "Use") and chunks[-2].text == "a | b\n1 | 2"
    assert chunks[-1].heading == ("Appendix",) and chunks[-1].text == "Last words."
    assert [c.seq for c in chunks] == list(range(len(chunks)))


def test_long_blocks_cut_at_sentences_and_lines_with_overlap() -> None:
    doc = _doc()
    chunks = [c for c in chunk_document(doc, count_words, ChunkSizes(max_tokens=40, overlap=10))
              if c.heading == ("Guide", "Install")]
    prose = [c for c in chunks if c.text.startswith("Sentence")]
    assert len(prose) > 2
    for a, b in zip(prose, prose[1:]):
        assert b.start < a.end  # overlap: the next starts inside the one before
        assert a.text.rstrip().endswith(".")  # cut at a sentence
    code = [c for c in chunks if "line_" in c.text]
    lines = [line for c in code for line in c.text.split("\n") if "line_" in line]
    assert all(re.fullmatch(r"line_(\d+) = \1", line) for line in lines)  # never cut inside a line


def test_small_blocks_are_packed_and_a_heading_starts_a_new_passage() -> None:
    d = Document("text")
    d.add("paragraph", "one two")
    d.add("paragraph", "three four")
    d.add("heading", "H", level=1)
    d.add("paragraph", "five")
    chunks = chunk_document(d, count_words, ChunkSizes(max_tokens=50, overlap=5))
    assert [(c.text, c.heading) for c in chunks] == [("one two\n\nthree four", ()), ("five", ("H",))]


def test_a_passage_stays_on_one_page() -> None:
    d = Document("pdf", pages=2)
    d.add("paragraph", "page one words", page=1)
    d.add("paragraph", "page two words", page=2)
    chunks = chunk_document(d, count_words, ChunkSizes(max_tokens=100, overlap=10))
    assert [(c.page, c.text) for c in chunks] == [(1, "page one words"), (2, "page two words")]


def test_a_sentence_longer_than_a_passage_is_cut_at_words_and_a_huge_word_by_characters() -> None:
    d = Document("text")
    d.add("paragraph", " ".join(f"w{i}" for i in range(100)))
    d.add("paragraph", "x" * 500)
    chunks = chunk_document(d, lambda s: max(1, len(s) // 10), ChunkSizes(max_tokens=20, overlap=0))
    assert all(c.tokens <= 20 for c in chunks)
    assert "".join(c.text for c in chunks if c.text.startswith("x")) == "x" * 500
    assert " ".join(c.text for c in chunks if c.text.startswith("w")).split() == [f"w{i}" for i in range(100)]


def test_sizes_checked() -> None:
    with pytest.raises(ValueError):
        chunk_document(Document("text"), count_words, ChunkSizes(max_tokens=10, overlap=10))
