"""The small bar at the bottom of the chat that offers Undo for a few seconds."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QWidget

from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import SPACE

MARGIN = 12  # from the bottom of the chat


class UndoToast(QFrame):
    """Floats over the bottom of its parent; shown by `offer`, hidden when the offer ends.

    Signals:
        undo_requested(): Undo was pressed.
    """

    undo_requested = Signal()

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setObjectName("undo-toast")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.label = plain_label()
        self.undo = QPushButton("Undo")
        self.undo.setObjectName("undo-button")
        self.undo.setAccessibleName("Undo the delete")
        self.undo.clicked.connect(self.undo_requested)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.xs, SPACE.xs, SPACE.xs)  # a pill, as the window's toast
        lay.addWidget(self.label)
        lay.addWidget(self.undo)
        self.hide()

    def offer(self, text: str) -> None:
        self.label.setText(text)
        self.adjustSize()
        self.place()
        self.show()
        self.raise_()

    def place(self) -> None:
        """Centre it at the bottom of the parent (call on the parent's resize)."""
        parent = self.parentWidget()
        if parent is not None:
            size = self.sizeHint()
            self.setGeometry((parent.width() - size.width()) // 2, parent.height() - size.height() - MARGIN,
                             size.width(), size.height())
