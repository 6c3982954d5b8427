"""Typed errors of the documents package; each message is a sentence a person can act on.

A reader raises a `DocumentError` for a file it cannot read; the indexer stores the sentence as the
file's problem and goes on with the next file.
"""

from __future__ import annotations

from pathlib import Path


class DocumentError(Exception):
    """A file could not be read as a document; `str()` says why and what to do."""

    def __init__(self, path: Path | str, reason: str):
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path.name}: {reason}")


class UnsupportedFormat(DocumentError):
    """A file whose kind no reader knows (an image, an archive, an executable…)."""


class BinaryFile(DocumentError):
    """Bytes that are not text: NUL bytes or control characters where text would be."""


class BadEncoding(DocumentError):
    """Text in no encoding the reader accepts (UTF-8, UTF-16 with its mark, Windows-1252)."""


class TooLarge(DocumentError):
    """A file past a stated limit (its bytes, its pages, a part's unpacked size); `limit` names it."""

    def __init__(self, path: Path | str, reason: str, limit: str):
        self.limit = limit
        super().__init__(path, reason)


class ZipBomb(TooLarge):
    """A DOCX whose parts would unpack past the limit, or far past their packed size."""


class EncryptedDocument(DocumentError):
    """A PDF (or other file) that needs a password to read."""


class ScannedDocument(DocumentError):
    """A PDF without a text layer on any page: images of pages, which Prefill does not read (no OCR)."""


class MalformedFile(DocumentError):
    """A file whose format is broken (a PDF or DOCX its reader cannot parse)."""


class IndexUnavailable(Exception):
    """The documents index file cannot be created, opened or written."""

    def __init__(self, path: Path, reason: str):
        self.path = path
        super().__init__(f"the documents index {path} cannot be opened: {reason}")


class CollectionNotFound(Exception):
    """No collection of that name."""

    def __init__(self, name: str):
        self.name = name
        super().__init__(f"no document collection named {name!r}: `prefill docs ls` lists them")


class EmbedderMismatch(Exception):
    """Vectors of a different size than the collection's: another embedding model without a re-index."""

    def __init__(self, expected: int, got: int):
        super().__init__(f"the embedding model gives vectors of {got} numbers; this collection holds {expected}: "
                         "index it again with this model")
