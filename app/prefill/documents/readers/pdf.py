"""PDF: the text layer of each page, through pypdf. A page without one is said to be scanned."""

from __future__ import annotations

import logging
from pathlib import Path

from prefill.documents.errors import EncryptedDocument, MalformedFile, ScannedDocument, TooLarge
from prefill.documents.readers.base import Document, ReadLimits
from prefill.documents.readers.text import paragraphs

# pypdf logs every quirk of a damaged file as a warning; what matters reaches the caller as an error.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def read_pdf(path: Path, limits: ReadLimits) -> Document:
    """Each page's paragraphs as blocks on that page.

    Raises:
        EncryptedDocument: The file needs a password (one with an empty password is opened).
        TooLarge: More pages than `limits.max_pages`.
        ScannedDocument: No page has a text layer.
        MalformedFile: pypdf cannot parse it.
    """
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except (DependencyError, NotImplementedError) as exc:
                raise EncryptedDocument(path, f"is encrypted in a way this reader cannot open ({exc})") from exc
            if not opened:
                raise EncryptedDocument(path, "is encrypted and needs a password: save an unprotected copy")
        n = len(reader.pages)
        if n > limits.max_pages:
            raise TooLarge(path, f"has {n:,} pages, more than the {limits.max_pages:,} read from one PDF: split it",
                           "max_pages")
        doc = Document("pdf", pages=n)
        scanned: list[int] = []
        for i in range(n):
            text = reader.pages[i].extract_text() or ""
            if not text.strip():
                scanned.append(i + 1)
                continue
            for para in page_paragraphs(text):
                doc.add("paragraph", para, page=i + 1)
    except FileNotDecryptedError as exc:
        raise EncryptedDocument(path, "is encrypted and needs a password: save an unprotected copy") from exc
    except (PdfReadError, ValueError, KeyError, TypeError, AssertionError, RecursionError) as exc:
        raise MalformedFile(path, f"is not a PDF pypdf can read ({type(exc).__name__}: {exc})") from exc
    if n and len(scanned) == n:
        raise ScannedDocument(path, f"has no text layer on any of its {n} pages: it is scanned (images of pages), "
                              "and Prefill does not read images of text")
    if scanned:
        doc.notes.append(f"pages without a text layer (scanned), not read: {_ranges(scanned)}")
    return doc


def page_paragraphs(text: str) -> list[str]:
    """A page's paragraphs. A text layer seldom keeps blank lines, so a line ending a sentence that is
    much shorter than the page's longest line ends a paragraph too."""
    out: list[str] = []
    for block in paragraphs(text):
        lines = block.split("\n")
        longest = max(len(line.rstrip()) for line in lines)
        start = 0
        for j, line in enumerate(lines[:-1]):
            end = line.rstrip()
            if end.endswith((".", "!", "?", ":")) and len(end) < 0.75 * longest:
                out.append("\n".join(lines[start:j + 1]))
                start = j + 1
        out.append("\n".join(lines[start:]))
    return [p for p in out if p.strip()]


def _ranges(pages: list[int]) -> str:
    """1, 2, 3, 7 → "1–3, 7"."""
    out: list[str] = []
    start = prev = pages[0]
    for p in pages[1:] + [0]:
        if p != prev + 1:
            out.append(str(start) if start == prev else f"{start}–{prev}")
            start = p
        prev = p
    return ", ".join(out)
