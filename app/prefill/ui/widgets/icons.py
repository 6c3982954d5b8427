"""The theme-tinted line icons: :func:`icon` gives a QIcon drawn from :mod:`icon_shapes`.

The icon engine paints at paint time in the application palette's text colour (muted when the
widget is disabled), so one QIcon follows a change of theme without being made again. Each icon's
pixmap is drawn once per size, mode and colour and kept (the transcript repaints the same few icons
on every message while an answer streams: a repaint draws a kept pixmap, never parses an SVG again).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from PySide6.QtCore import QByteArray, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QGuiApplication, QIcon, QIconEngine, QImage, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer

from prefill.ui.widgets.icon_shapes import SHAPES


def _document(shape: str, colour: str) -> bytes:
    """An icon's SVG, stroked in `colour`."""
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" '
        f'stroke="{colour}" stroke-width="1.75" stroke-linecap="round" stroke-linejoin="round">'
        f"{shape}</svg>"
    ).encode()


def _svg(shape: str, colour: str) -> bytes:
    """The SVG an icon is drawn from (its own name: a test counts the drawings by it)."""
    return _document(shape, colour)


_kept: dict[tuple[str, int, int, int, str, float], QPixmap] = {}  # (name, size, mode, colour, ratio): pixmap


class _LineIconEngine(QIconEngine):
    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    def _kept_pixmap(self, size: QSize, mode: QIcon.Mode, ratio: float) -> QPixmap:
        palette = QGuiApplication.palette()
        group = QPalette.ColorGroup.Disabled if mode == QIcon.Mode.Disabled else QPalette.ColorGroup.Active
        colour = palette.color(group, QPalette.ColorRole.WindowText).name()
        key = (self._name, size.width(), size.height(), mode.value, colour, ratio)
        kept = _kept.get(key)
        if kept is None:
            image = QImage(size * ratio, QImage.Format.Format_ARGB32_Premultiplied)
            image.fill(Qt.GlobalColor.transparent)
            painter = QPainter(image)
            QSvgRenderer(QByteArray(_svg(SHAPES[self._name], colour))).render(painter, QRectF(image.rect()))
            painter.end()
            kept = _kept[key] = QPixmap.fromImage(image)
            kept.setDevicePixelRatio(ratio)
        return kept

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        device = painter.device()
        ratio = device.devicePixelRatioF() if device is not None else 1.0
        painter.drawPixmap(rect, self._kept_pixmap(rect.size(), mode, ratio))

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        return QPixmap(self._kept_pixmap(size, mode, 1.0))  # a copy: the caller may draw on it

    def clone(self) -> QIconEngine:
        return _LineIconEngine(self._name)

    def iconName(self) -> str:
        return self._name  # QIcon.name(): which line icon this is


def icon(name: str) -> QIcon:
    """The line icon called ``name``, tinted by the theme in use when it is drawn.

    Raises:
        KeyError: no icon has that name (the names are :data:`icon_shapes.SHAPES`' keys).
    """
    if name not in SHAPES:
        raise KeyError(f"no icon called {name!r}")
    return QIcon(_LineIconEngine(name))


def icon_file(name: str, colour: str, folder: Path | None = None) -> str:
    """The line icon ``name`` stroked in ``colour`` (``#rrggbb``), as an SVG file for a style sheet's
    ``image: url(…)`` (the arrows of combo and spin boxes, which a style sheet cannot draw otherwise).
    Written once into the user's own cache folder (``folder``; not the shared temp folder, where another
    user could put a file of theirs first), whole or not at all; a few hundred bytes. "" where it cannot
    be written (the control then keeps Fusion's own arrow).

    Raises:
        KeyError: no icon has that name.
    """
    shape = SHAPES[name]
    folder = folder or Path(platformdirs.user_cache_dir("prefill", appauthor=False)) / "icons"
    path = folder / f"{name}-{colour.lstrip('#')}.svg"
    document = _document(shape, colour)
    if path.is_file() and path.read_bytes() == document:
        return path.as_posix()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_bytes(document)
        os.replace(part, path)
    except OSError:
        return ""
    return path.as_posix()
