"""A test that applies a theme gives the application back as it found it: its style, palette, style
sheet and font (a theme sets all four, and later tests in the same process would inherit them)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtWidgets import QApplication, QStyleFactory


@contextmanager
def restored_look(app: QApplication) -> Iterator[QApplication]:
    """Within the block, `app` may be themed; afterwards it has its style, palette, sheet and font back."""
    sheet, palette, font = app.styleSheet(), app.palette(), app.font()
    style = app.style().name() or "fusion"
    try:
        yield app
    finally:
        app.setStyleSheet(sheet)
        app.setStyle(QStyleFactory.create(style))
        app.setPalette(palette)
        app.setFont(font)
