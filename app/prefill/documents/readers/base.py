"""What a reader gives back: a `Document` of typed blocks over one text, and the limits it reads under."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

BlockKind = Literal["heading", "paragraph", "code", "table"]

MiB = 1024 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """What a reader refuses before (or while) it works; each refusal names the limit it hit.

    Attributes:
        max_bytes: The largest file read at all.
        max_pages: The most pages of a PDF.
        max_unpacked: The most bytes a DOCX's parts may unpack to, all together (declared and actual).
        max_ratio: The most a DOCX part may unpack past its packed size (a bomb unpacks thousands of times).
        max_parts: The most parts (zip members) a DOCX may hold.
    """

    max_bytes: int = 256 * MiB
    max_pages: int = 5000
    max_unpacked: int = 256 * MiB
    max_ratio: int = 200
    max_parts: int = 10_000


@dataclass(frozen=True)
class Block:
    """One piece of a document's structure: a heading, a paragraph, a code block or a table.

    Attributes:
        kind: What it is.
        start, end: Its characters in `Document.text` (`text[start:end]` is the block).
        page: The PDF page it is on (1-based); None where a format has no pages.
        level: A heading's level (1 the highest); 0 for other blocks.
    """

    kind: BlockKind
    start: int
    end: int
    page: int | None = None
    level: int = 0


@dataclass
class Document:
    """A file read: its whole text and the blocks that cut it.

    Attributes:
        kind: The reader that read it (pdf, docx, html, markdown, text, code, csv).
        text: The document's text, blocks separated by blank lines.
        blocks: In order; each a span of `text`.
        pages: How many pages (PDF); 0 where a format has none.
        notes: What the reader could not read but went on past (a scanned page, a guessed encoding).
    """

    kind: str
    text: str = ""
    blocks: list[Block] = field(default_factory=list)
    pages: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, kind: BlockKind, text: str, page: int | None = None, level: int = 0) -> None:
        """Append a block (blank ones are dropped)."""
        text = text.strip()
        if not text:
            return
        if self.text:
            self.text += "\n\n"
        start = len(self.text)
        self.text += text
        self.blocks.append(Block(kind, start, len(self.text), page, level))

    def block_text(self, block: Block) -> str:
        return self.text[block.start:block.end]
