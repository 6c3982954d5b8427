"""Thumbnails: the cache that makes each one once, the row of them, and the larger view.

`ImageThumbs` keeps one `QPixmap` per image digest. A thumbnail is scaled on the pool
(`image_jobs.thumbnail`) and turned into a pixmap here, on the GUI thread, once; a paint only
draws it. `ImageStrip` is a row of fixed-size tiles (so a message's height does not change when a
thumbnail arrives): in the input box each has a × that removes it; on a message a click opens
`ImageViewer`.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtGui import QGuiApplication, QImage, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.message import ImagePart
from prefill.ui.chat.images.image_jobs import THUMB_PX, thumbnails
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.workers.pool_jobs import PoolJobs

TILE_PX = THUMB_PX + 8


class ImageThumbs(QObject):
    """Thumbnails by digest, each made once off the GUI thread.

    Signals:
        ready(str): the thumbnail of this digest is now in the cache.
    """

    ready = Signal(str)

    def __init__(self, jobs: PoolJobs, parent: QObject | None = None):
        super().__init__(parent)
        self._jobs = jobs
        self._pixmaps: dict[str, QPixmap] = {}
        self._asked: set[str] = set()

    def add(self, digest: str, image: QImage) -> None:
        """A thumbnail made elsewhere on the pool (an image just attached): kept, not made again."""
        if digest not in self._pixmaps and not image.isNull():
            self._pixmaps[digest] = QPixmap.fromImage(image)
            self.ready.emit(digest)

    def pixmap(self, digest: str) -> QPixmap | None:
        return self._pixmaps.get(digest)

    def want(self, parts: Sequence[ImagePart]) -> None:
        """Make the thumbnails of `parts` not in the cache yet (on the pool; `ready` says when)."""
        missing = tuple(p for p in parts if p.digest not in self._pixmaps and p.digest not in self._asked)
        if missing:
            self._asked.update(p.digest for p in missing)
            self._jobs.run(thumbnails, missing, then=self._made, error=lambda _e: None)

    def _made(self, made: list[tuple[str, QImage]]) -> None:
        for digest, image in made:
            self._asked.discard(digest)
            self.add(digest, image)


class _Tile(QWidget):
    def __init__(self, index: int, part: ImagePart, removable: bool, strip: ImageStrip):
        super().__init__()
        self.setFixedSize(TILE_PX, TILE_PX)
        self.picture = QLabel(self)
        self.picture.setObjectName("image-thumb")
        self.picture.setGeometry(0, 0, TILE_PX, TILE_PX)
        self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.picture.setToolTip(f"{part.width} × {part.height} · {len(part.data) / 1024:.0f} KiB")
        self.picture.setStyleSheet("border: 1px solid palette(mid); border-radius: 4px;")
        self.picture.setCursor(Qt.CursorShape.PointingHandCursor)
        self.picture.mousePressEvent = lambda _e: strip.opened.emit(index)  # type: ignore[method-assign]
        if removable:
            remove = QToolButton(self)
            remove.setObjectName("image-remove")
            remove.setText("×")
            remove.setToolTip("Remove this image")
            remove.setAccessibleName("Remove this image")
            remove.setFixedSize(18, 18)
            remove.move(TILE_PX - 19, 1)
            remove.clicked.connect(lambda: strip.removed.emit(index))


class ImageStrip(QWidget):
    """A row of thumbnails.

    Signals:
        removed(int): the × of this image was clicked (the input box's strip).
        opened(int): this image was clicked (to view it larger).
    """

    removed = Signal(int)
    opened = Signal(int)

    def __init__(self, thumbs: ImageThumbs, removable: bool = False):
        super().__init__()
        self.setObjectName("image-strip")
        self._thumbs, self._removable = thumbs, removable
        self.parts: tuple[ImagePart, ...] = ()
        self.tiles: list[_Tile] = []
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 2, 0, 2)
        self._row.setSpacing(6)
        self._row.addStretch(1)
        thumbs.ready.connect(self._on_thumbs_ready)
        self.opened.connect(self._on_opened)
        self.hide()

    def set_images(self, parts: Sequence[ImagePart]) -> None:
        for tile in self.tiles:
            self._row.removeWidget(tile)
            tile.deleteLater()
        self.parts = tuple(parts)
        self.tiles = [_Tile(i, p, self._removable, self) for i, p in enumerate(self.parts)]
        for i, tile in enumerate(self.tiles):
            self._row.insertWidget(i, tile)
            self._show_thumb(i)
        self._thumbs.want(self.parts)
        self.setVisible(bool(self.parts))

    def _show_thumb(self, i: int) -> None:
        pixmap = self._thumbs.pixmap(self.parts[i].digest)
        self.tiles[i].picture.setPixmap(pixmap if pixmap is not None else QPixmap())
        if pixmap is None:
            self.tiles[i].picture.setText("…")

    def _on_thumbs_ready(self, digest: str) -> None:
        for i, p in enumerate(self.parts):
            if p.digest == digest:
                self._show_thumb(i)

    def _on_opened(self, index: int) -> None:
        if 0 <= index < len(self.parts):
            ImageViewer(self.parts[index], self.window()).open()


class ImageViewer(QDialog):
    """One image, larger: fitted to most of the screen (never enlarged), scrollable past that."""

    def __init__(self, part: ImagePart, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("image-viewer")
        self.setWindowTitle(f"Image · {part.width} × {part.height}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        screen = QGuiApplication.primaryScreen()
        room = screen.availableSize() * 0.8 if screen is not None else QSize(1200, 800)
        # The bytes passed the door; a pixmap of them is made once, on this click.
        pixmap = QPixmap()
        pixmap.loadFromData(part.data)
        if pixmap.width() > room.width() or pixmap.height() > room.height():
            pixmap = pixmap.scaled(room, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)
        self.picture = QLabel()
        self.picture.setPixmap(pixmap)
        self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        scroll = QScrollArea()
        scroll.setWidget(self.picture)
        scroll.setWidgetResizable(True)
        lay = QVBoxLayout(self)
        lay.addWidget(scroll)
        size = f"{part.width} × {part.height} pixels · {part.mime} · {len(part.data) / 1024:.0f} KiB"
        lay.addWidget(plain_label(size))
        self.resize(min(room.width(), pixmap.width() + 40), min(room.height(), pixmap.height() + 70))
