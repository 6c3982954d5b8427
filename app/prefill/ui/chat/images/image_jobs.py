"""What runs on the pool for an image: the door (decode, check, scale, hash) and the thumbnail.

Each function here runs on a `PoolJobs` thread, never on the GUI thread: an image of a few
megapixels takes tens of milliseconds to decode. A thumbnail is a `QImage` (safe to make off the
GUI thread); the GUI thread turns it into a `QPixmap` once (`ImageThumbs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QImage

from prefill.engine.message import ImagePart
from prefill.engine.vision.errors import ImageRejected
from prefill.engine.vision.image_door import check_image, read_image_file

THUMB_PX = 72  # a thumbnail's longer side, in the input box and on a message


@dataclass(frozen=True)
class Admitted:
    """An image that passed the door, with its thumbnail and the name it came by."""

    part: ImagePart
    thumb: QImage
    name: str


def admit_file(path: str) -> Admitted:
    """An image file through the door (pool thread).

    Raises:
        ImageRejected: not an image, damaged, a bomb, too large a file, unreadable.
    """
    part = read_image_file(path)
    return Admitted(part, thumbnail(part), Path(path).name)


def admit_bytes(data: bytes, name: str) -> Admitted:
    """Encoded image bytes through the door (pool thread).

    Raises:
        ImageRejected: as `admit_file`.
    """
    try:
        part = check_image(data)
    except ImageRejected as e:
        raise ImageRejected(e.reason, name) from None
    return Admitted(part, thumbnail(part), name)


def admit_qimage(image: QImage, name: str = "pasted image") -> Admitted:
    """A pasted bitmap: encoded as PNG, then through the door like any file (pool thread).

    Raises:
        ImageRejected: an empty bitmap, or one the door refuses (a bomb's size).
    """
    if image.isNull():
        raise ImageRejected("the clipboard's image is empty", name)
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs say bytes; PySide takes str
    data: QByteArray = buffer.data()
    return admit_bytes(bytes(data.data()), name)


def thumbnail(part: ImagePart, side: int = THUMB_PX) -> QImage:
    """The image scaled to fit `side` × `side` (pool thread); a null QImage if Qt cannot read it."""
    image = QImage.fromData(part.data)
    if image.isNull():
        return image
    return image.scaled(side, side, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)


def thumbnails(parts: tuple[ImagePart, ...]) -> list[tuple[str, QImage]]:
    """The thumbnails of a message's images, by digest (pool thread)."""
    return [(p.digest, thumbnail(p)) for p in parts]
