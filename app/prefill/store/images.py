"""The images of the history: one private file per image, named by its SHA-256 digest.

A message refers to its images by digest (the ``images`` column); the bytes live in the
``images`` folder beside the database, mode 0600 in a 0700 folder, so the same image sent in
many chats (or twice in one) is one file. A file is written before the row that refers to it,
and the orphan sweep (``HistoryStore`` runs it after a chat or a message is deleted) removes
the files no row refers to any more. Nothing here decodes an image: what was written passed
the image door, and what is read back is checked against its digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from prefill.engine.message import ImagePart
from prefill.engine.private_paths import private_folder
from prefill.store.records import ImageRef

IMAGES_FOLDER = "images"


class ImageFiles:
    """The image files of one history (``folder``: the ``images`` folder beside its database)."""

    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, digest: str) -> Path:
        return self.folder / digest

    def put(self, image: ImagePart) -> ImageRef:
        """Keep `image` (once: an image already here is not written again) and return its reference.

        Raises:
            OSError: The folder or the file cannot be written (a partial file is removed).
        """
        ref = ImageRef.of(image)
        target = self.path(ref.digest)
        if target.is_file() and target.stat().st_size == ref.size:
            return ref
        private_folder(self.folder)
        # mkstemp makes the file 0600; os.replace puts it in place whole, so a crash leaves no half image.
        fd, temp = tempfile.mkstemp(prefix=f".{ref.digest[:16]}.", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(image.data)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return ref

    def load(self, ref: ImageRef) -> ImagePart | None:
        """The image a reference names; None when its file is missing or is not what was kept."""
        try:
            data = self.path(ref.digest).read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != ref.digest:
            return None
        part = ImagePart(data, ref.mime, ref.width, ref.height)
        object.__setattr__(part, "_digest", ref.digest)  # just checked: no second hash when it is sent
        return part

    def load_all(self, refs: Iterable[ImageRef]) -> tuple[ImagePart, ...]:
        """The images of a message that are still here, in order."""
        return tuple(p for p in map(self.load, refs) if p is not None)

    def sweep(self, used: set[str]) -> int:
        """Remove every image file whose digest is not in `used`; return how many went."""
        removed = 0
        try:
            names = os.listdir(self.folder)
        except OSError:
            return 0
        for name in names:
            if name not in used:
                with contextlib.suppress(OSError):
                    os.unlink(self.folder / name)
                    removed += 1
        return removed
