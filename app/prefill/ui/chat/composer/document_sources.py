"""What a paste or a drop offers as images, and what as documents: taken apart once, on the GUI thread.

A local file whose name says it is a picture (.png, .jpg, …) goes to the images, as does a bitmap; every
other local file or folder goes to the documents, whose indexer reads the kinds it knows (PDF, DOCX, HTML,
Markdown, text, code, CSV) and says of any other, in words, why it was not read. Only names are looked at
here (no file is opened or even looked up: the GUI thread never waits on the disk); reading is the
documents worker's job, and the image door's.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData

from prefill.ui.chat.images.image_sources import ImageSource, image_sources

MAX_DOCUMENTS = 256  # files and folders in one paste or drop
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".jpe", ".webp", ".gif", ".bmp", ".tif", ".tiff", ".heic",
                            ".heif", ".avif", ".ico", ".svg"})


def is_document(path: str) -> bool:
    """Whether `path` goes to the documents: anything but a picture, by its name."""
    return Path(path).suffix.lower() not in IMAGE_SUFFIXES


def document_paths(mime: QMimeData | None) -> list[str]:
    """The local files and folders `mime` offers as documents ([] when none)."""
    if mime is None or not mime.hasUrls():
        return []
    paths = [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]
    return [p for p in paths if is_document(p)][:MAX_DOCUMENTS]


def offered(mime: QMimeData | None) -> tuple[list[ImageSource], list[str]]:
    """What `mime` offers: (images, documents)."""
    documents = document_paths(mime)
    images = [s for s in image_sources(mime) if not (isinstance(s, str) and is_document(s))]
    return images, documents
