"""Markdown, plain text and source code: blocks by headings, fences, tables and blank lines."""

from __future__ import annotations

import re

from prefill.documents.readers.base import Document
from prefill.documents.readers.text import paragraphs

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def read_markdown(text: str) -> Document:
    """ATX and setext headings, fenced code, pipe tables and paragraphs."""
    doc = Document("markdown")
    lines = text.split("\n")
    para: list[str] = []

    def flush() -> None:
        if para:
            table = all(line.lstrip().startswith("|") for line in para if line.strip())
            doc.add("table" if table else "paragraph", "\n".join(para))
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush()
            mark = fence.group(1)
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(mark):
                body.append(lines[i])
                i += 1
            doc.add("code", "\n".join(body))
            i += 1
            continue
        atx = _ATX.match(line)
        if atx:
            flush()
            doc.add("heading", atx.group(2), level=len(atx.group(1)))
        elif _SETEXT.match(line) and len(para) == 1 and not para[0].lstrip().startswith("|"):
            heading = para.pop()
            doc.add("heading", heading, level=1 if line.strip().startswith("=") else 2)
        elif not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return doc


def read_text(text: str) -> Document:
    """Paragraphs between blank lines."""
    doc = Document("text")
    for p in paragraphs(text):
        doc.add("paragraph", p)
    return doc


def read_code(text: str) -> Document:
    """Code blocks between blank lines (a function stays whole unless it holds blank lines)."""
    doc = Document("code")
    for p in re.split(r"\n[ \t]*\n", text):
        if p.strip():
            doc.add("code", p.rstrip())
    return doc
