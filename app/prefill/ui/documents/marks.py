"""Small parts the documents room draws with: a line icon as a mark before a line, and a one-line label that
cuts a long name with "…" instead of widening what holds it."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QWidget

from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.tokens import ICON, SPACE


class IconMark(QWidget):
    """A line icon painted at paint time (so it follows a theme switch); `set_name` changes it."""

    def __init__(self, name: str, size: int = ICON.inline) -> None:
        super().__init__()
        self.name = name
        self._icon = icon(name)
        self.setFixedSize(QSize(size, size))

    def set_name(self, name: str) -> None:
        if name != self.name:
            self.name = name
            self._icon = icon(name)
            self.update()

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        self._icon.paint(painter, self.rect())
        painter.end()


class ElidedLabel(QLabel):
    """One line of plain text, cut at its end with "…" where it is wider than the room it has; `full`
    is the whole text (a screen reader hears it whole)."""

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(0)
        self.full = ""
        self.set_full(text)

    def set_full(self, text: str) -> None:
        self.full = text
        self.setAccessibleName(text)
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        shown = self.fontMetrics().elidedText(self.full, Qt.TextElideMode.ElideRight, max(0, self.width()))
        if shown != self.text():
            self.setText(shown)


def marked(name: str, label: QLabel, size: int = ICON.inline) -> QHBoxLayout:
    """A line with its mark before it (the mark at the top of a line that wraps)."""
    row = QHBoxLayout()
    row.setSpacing(SPACE.sm)
    row.addWidget(IconMark(name, size), 0, Qt.AlignmentFlag.AlignTop)
    row.addWidget(label, 1)
    return row


def repolish(widget: QWidget) -> None:
    """Apply the style sheet again after a property its rules read has changed."""
    widget.style().unpolish(widget)
    widget.style().polish(widget)
