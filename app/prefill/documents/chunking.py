"""Cutting a document into passages by its structure, sized in tokens, with overlap.

A heading starts a new passage and becomes part of the heading path of those under it; a page starts a
new passage (so each passage has one page); paragraphs, code blocks and tables are packed together up to
`max_tokens`, and one too long for a passage is cut at its sentences (prose) or lines (code, tables), a
sentence still too long at its words. A passage cut for size starts with the last sentences or lines of
the one before, up to `overlap` tokens. Every passage's text is `document.text[start:end]`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from prefill.documents.readers.base import Block, Document

CountTokens = Callable[[str], int]

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")
_LINE_END = re.compile(r"\n")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class ChunkSizes:
    """How large a passage is, in the embedding model's tokens.

    Attributes:
        max_tokens: The most tokens one passage holds (keep it under the embedding model's context).
        overlap: How many tokens of the passage before a passage cut for size starts with.
    """

    max_tokens: int = 200
    overlap: int = 40


@dataclass(frozen=True)
class Chunk:
    """One passage.

    Attributes:
        text: Its words (`document.text[start:end]`).
        start, end: Its characters in the document's text.
        page: The PDF page it is on (1-based), None where the format has no pages.
        heading: The headings above it, the outermost first.
        tokens: Its size in tokens, as counted by the counter given (the sum over its pieces).
        seq: Its place in the document (0-based).
    """

    text: str
    start: int
    end: int
    page: int | None
    heading: tuple[str, ...]
    tokens: int
    seq: int


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    tokens: int
    page: int | None


def chunk_document(doc: Document, count_tokens: CountTokens, sizes: ChunkSizes = ChunkSizes()) -> list[Chunk]:
    """The passages of `doc`, in order."""
    if sizes.max_tokens < 8 or not 0 <= sizes.overlap < sizes.max_tokens:
        raise ValueError("max_tokens must be at least 8, and overlap between 0 and max_tokens")
    out: list[Chunk] = []
    path: list[tuple[int, str]] = []
    units: list[_Unit] = []

    def flush(carry: bool) -> None:
        if not units:
            return
        start, end = units[0].start, units[-1].end
        out.append(Chunk(doc.text[start:end], start, end, units[0].page, tuple(h for _, h in path),
                         sum(u.tokens for u in units), len(out)))
        kept: list[_Unit] = []
        if carry and sizes.overlap:
            room = sizes.overlap
            for u in reversed(units[1:]):
                if u.tokens > room:
                    break
                kept.insert(0, u)
                room -= u.tokens
        units[:] = kept

    for block in doc.blocks:
        text = doc.block_text(block)
        if block.kind == "heading":
            flush(carry=False)
            while path and path[-1][0] >= block.level:
                path.pop()
            path.append((block.level, " ".join(text.split())))
            continue
        if units and units[-1].page != block.page:
            flush(carry=False)
        for unit in _units(doc, block, count_tokens, sizes.max_tokens):
            if units and sum(u.tokens for u in units) + unit.tokens > sizes.max_tokens:
                flush(carry=True)
                while units and sum(u.tokens for u in units) + unit.tokens > sizes.max_tokens:
                    units.pop(0)
            units.append(unit)
    flush(carry=False)
    return out


def _units(doc: Document, block: Block, count: CountTokens, limit: int) -> list[_Unit]:
    """The block whole when it fits, else its sentences or lines (each cut at words if still too long)."""
    text = doc.block_text(block)
    n = count(text)
    if n <= limit:
        return [_Unit(block.start, block.end, n, block.page)]
    splitter = _SENTENCE_END if block.kind == "paragraph" else _LINE_END
    out: list[_Unit] = []
    pos = 0
    for m in [*splitter.finditer(text), None]:
        end = m.start() if m is not None else len(text)
        if text[pos:end].strip():
            piece_start = block.start + pos
            piece = doc.text[piece_start:block.start + end]
            k = count(piece)
            if k <= limit:
                out.append(_Unit(piece_start, block.start + end, k, block.page))
            else:
                out.extend(_words(doc, piece_start, piece, k, count, limit, block.page))
        pos = m.end() if m is not None else len(text)
    return out


def _words(doc: Document, offset: int, text: str, tokens: int, count: CountTokens, limit: int,
           page: int | None) -> list[_Unit]:
    """A run of words cut into pieces of at most `limit` tokens (a piece of one word cut by characters)."""
    words = list(_WORD.finditer(text))
    per = max(1, int(len(words) * limit / tokens * 0.8))
    out: list[_Unit] = []
    i = 0
    while i < len(words):
        j = min(len(words), i + per)
        while True:
            s, e = words[i].start(), words[j - 1].end()
            k = count(text[s:e])
            if k <= limit or j - i == 1:
                break
            j = i + max(1, (j - i) // 2)
        if k > limit:  # one "word" longer than a passage: cut by characters
            chars = max(1, (e - s) * limit // k)
            for c in range(s, e, chars):
                piece = text[c:min(e, c + chars)]
                out.append(_Unit(offset + c, offset + c + len(piece), min(limit, count(piece)), page))
        else:
            out.append(_Unit(offset + s, offset + e, k, page))
        i = j
    return out
