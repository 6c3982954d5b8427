"""One line of plain text that gives way to its width: a shorter wording first, then cut with "…".

A cell or a row that gets narrow (900×600, the Serve panel open beside it) clips a plain label in the
middle of a word. This label keeps its whole text (``text()``, the tooltip, the screen reader's name)
and draws the longest of its wordings that fits, the last one cut at the right when none does.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from prefill.ui.widgets.plain_text import tooltip


class ElidedLabel(QLabel):
    """A plain-text label drawn on one line within its width.

    Args:
        text: what it says whole.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._shorter: tuple[str, ...] = ()
        self._hover = ""
        self.set_text(text)

    def set_text(self, text: str, *shorter: str, hover: str = "") -> None:
        """Say ``text``; where it does not fit, the first of ``shorter`` that does (else the last, cut).

        ``hover`` is added to the tooltip under the whole text.
        """
        self._shorter, self._hover = tuple(shorter), hover
        self.setText(text)
        self.setToolTip(tooltip("\n".join(p for p in (text, hover) if p)))
        self.setAccessibleName(text)
        self.update()

    def shown(self) -> str:
        """What is drawn at its width now (a test reads it)."""
        width = self.contentsRect().width()
        metrics = self.fontMetrics()
        wordings = (self.text(), *self._shorter)
        for words in wordings:
            if metrics.horizontalAdvance(words) <= width:
                return words
        return metrics.elidedText(wordings[-1], Qt.TextElideMode.ElideRight, width)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(0, super().minimumSizeHint().height())

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        p.setPen(self.palette().color(self.foregroundRole()))
        p.setFont(self.font())
        p.drawText(self.contentsRect(), int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), self.shown())
