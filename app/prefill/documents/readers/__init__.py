"""The door for documents: `read_document` reads one file of a known kind, or refuses it in words.

Every fault is a `DocumentError` (see `prefill.documents.errors`), priced before the work where it
can be: the file's bytes and a PDF's pages against `ReadLimits`, a DOCX's parts by their declared
and unpacked sizes before python-docx opens it.
"""

from __future__ import annotations

import stat
from pathlib import Path

from prefill.documents.errors import DocumentError, MalformedFile, TooLarge, UnsupportedFormat
from prefill.documents.readers.base import Block, Document, ReadLimits
from prefill.documents.readers.docx import read_docx
from prefill.documents.readers.html import read_html
from prefill.documents.readers.markdown import read_code, read_markdown, read_text
from prefill.documents.readers.pdf import read_pdf
from prefill.documents.readers.table import read_csv
from prefill.documents.readers.text import decode

__all__ = ["Block", "Document", "ReadLimits", "read_document", "check_file", "kind_of", "KNOWN_SUFFIXES"]

TEXT_SUFFIXES = frozenset({".txt", ".text", ".log", ".rst", ".org", ".adoc", ".tex", ""})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
CSV_SUFFIXES = frozenset({".csv", ".tsv"})
CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs",
    ".go", ".rs", ".rb", ".php", ".swift", ".scala", ".sh", ".bash", ".zsh", ".ps1", ".sql", ".r", ".lua", ".pl",
    ".m", ".hs", ".ml", ".ex", ".exs", ".erl", ".clj", ".dart", ".toml", ".yaml", ".yml", ".json", ".ini", ".cfg",
    ".xml", ".css", ".scss", ".vue", ".svelte", ".zig", ".nim", ".jl", ".f90", ".cmake", ".mk", ".gradle",
})
KNOWN_SUFFIXES = (frozenset({".pdf", ".docx"}) | TEXT_SUFFIXES | MARKDOWN_SUFFIXES | HTML_SUFFIXES
                  | CSV_SUFFIXES | CODE_SUFFIXES) - {""}
_NAMED = {"makefile": "code", "dockerfile": "code", "readme": "text", "license": "text"}


def kind_of(path: Path) -> str | None:
    """The reader for `path` by its name (None: no reader knows it)."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return "pdf"
    if suffix == ".docx":
        return "docx"
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in CSV_SUFFIXES:
        return "csv"
    if suffix in CODE_SUFFIXES:
        return "code"
    if suffix in TEXT_SUFFIXES:
        return "text"
    return _NAMED.get(path.name.lower())


def check_file(path: Path, limits: ReadLimits = ReadLimits()) -> str:
    """What can be known before a byte is read: a reader for its kind, a regular file (not a pipe or a
    device, which never end), within the size limit. Returns the reader's kind.

    Raises:
        UnsupportedFormat, TooLarge, DocumentError: Why not, in words.
    """
    kind = kind_of(path)
    if kind is None:
        raise UnsupportedFormat(path, f"is a {path.suffix or 'suffix-less'} file, which Prefill does not read "
                                "(it reads PDF, DOCX, HTML, Markdown, text, CSV and source code)")
    try:
        st = path.stat()
    except OSError as exc:
        raise DocumentError(path, f"cannot be opened: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise DocumentError(path, "is not a regular file (a pipe, a device or a folder): nothing to read")
    if st.st_size > limits.max_bytes:
        raise TooLarge(path, f"is {st.st_size:,} bytes, more than the {limits.max_bytes:,} read from one file",
                       "max_bytes")
    return kind


def read_document(path: Path, limits: ReadLimits = ReadLimits()) -> Document:
    """Read one file by its kind.

    Raises:
        DocumentError: One of its kinds, with a sentence saying why (see `prefill.documents.errors`).
    """
    kind = check_file(path, limits)
    try:
        if kind in ("pdf", "docx"):
            with path.open("rb") as f:
                head = f.read(8)
            if kind == "pdf" and not head.startswith(b"%PDF-"):
                raise MalformedFile(path, "is named .pdf but does not start as a PDF does")
            if kind == "docx" and not head.startswith(b"PK"):
                raise MalformedFile(path, "is named .docx but is not a zip file, as a DOCX is")
            return read_pdf(path, limits) if kind == "pdf" else read_docx(path, limits)
        notes: list[str] = []
        text = decode(path, path.read_bytes(), notes)
    except DocumentError:
        raise
    except OSError as exc:
        raise DocumentError(path, f"cannot be read: {exc.strerror or exc}") from exc
    except MemoryError as exc:
        raise TooLarge(path, "does not fit in memory", "memory") from exc
    if kind == "markdown":
        doc = read_markdown(text)
    elif kind == "html":
        doc = read_html(text)
    elif kind == "csv":
        doc = read_csv(text, "\t" if path.suffix.lower() == ".tsv" else None)
    elif kind == "code":
        doc = read_code(text)
    else:
        doc = read_text(text)
    doc.notes.extend(notes)
    return doc
