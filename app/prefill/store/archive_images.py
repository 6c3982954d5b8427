"""The images of a Prefill JSON export, checked before an import writes anything.

An export keeps each image once, under its digest: ``{"mime", "width", "height", "data"}`` with
the bytes in base64. Each one is decoded at the image door (``engine/vision/image_door.py``: not
an image, damaged, a decompression bomb, too large a file), and the bytes must hash to the digest they are filed under.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from prefill.engine.message import ImagePart
from prefill.engine.vision.errors import ImageRejected
from prefill.engine.vision.image_door import MAX_BYTES, check_image
from prefill.store.records import DIGEST

MAX_IMAGES = 10_000  # in one export


class BadImage(Exception):
    """An image of an export refused; the text says where and why."""


def export_images(value: object) -> dict[str, ImagePart]:
    """The ``images`` of an export by digest (absent: none, as in exports before images).

    Raises:
        BadImage: Not an object of digests to images, or an image the door refuses or that is not
            what its digest says.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadImage("images: expected an object of images by digest")
    if len(value) > MAX_IMAGES:
        raise BadImage(f"images: more than {MAX_IMAGES} images")
    return {digest: _image(digest, entry) for digest, entry in value.items()}


def message_images(value: object, images: dict[str, ImagePart], where: str) -> tuple[ImagePart, ...]:
    """A message's ``images``: digests of the export's images, in order.

    Raises:
        BadImage: Not a list of digests the export holds.
    """
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_IMAGES:
        raise BadImage(f"{where}.images: expected a list of image digests")
    out = []
    for n, digest in enumerate(value):
        if not isinstance(digest, str) or digest not in images:
            raise BadImage(f"{where}.images[{n}]: names no image of this file")
        out.append(images[digest])
    return tuple(out)


def _image(digest: object, entry: Any) -> ImagePart:
    where = f"images[{str(digest)[:70]!r}]"
    if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
        raise BadImage(f"{where}: the key is not a SHA-256 digest")
    if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
        raise BadImage(f"{where}: expected an object with the image's base64 data")
    text = entry["data"]
    if len(text) > (MAX_BYTES * 4) // 3 + 4:
        raise BadImage(f"{where}: the image is larger than {MAX_BYTES // 2**20} MiB")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadImage(f"{where}: the data is not base64") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise BadImage(f"{where}: the image is not the one its digest names")
    try:
        # What the door gives back is kept: an image it scales or converts is stored as it would
        # have been had it been attached here (then under its new digest).
        return check_image(data)
    except ImageRejected as e:
        raise BadImage(f"{where}: {e.reason}") from None
