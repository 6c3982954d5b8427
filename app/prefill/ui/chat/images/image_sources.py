"""What a paste or a drop offers as images: local files (by URL) or a bitmap, read at once.

A drop's `QMimeData` is gone after the drop, so the sources are taken out of it here, on the GUI
thread, cheaply (a path, or the bitmap Qt already holds); decoding and checking them is the pool's
work (`image_jobs`). A URL that is not a local file is not fetched; any local file is offered, and
the door refuses what is not an image, in words.
"""

from __future__ import annotations

from PySide6.QtCore import QMimeData
from PySide6.QtGui import QImage

ImageSource = str | QImage  # a local file's path, or a bitmap (a pasted screenshot)
MAX_OFFERED = 16  # images in one paste or drop; more is a folder dropped by mistake


def image_sources(mime: QMimeData | None) -> list[ImageSource]:
    """The images `mime` offers: its local file URLs, else its bitmap; [] when none."""
    if mime is None:
        return []
    if mime.hasUrls():
        paths = [u.toLocalFile() for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]
        if paths:
            return list(paths[:MAX_OFFERED])
    if mime.hasImage():
        image = mime.imageData()
        if isinstance(image, QImage) and not image.isNull():
            return [image]
    return []
