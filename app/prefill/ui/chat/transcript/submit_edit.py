"""A plain-text box whose keys are a chat's: Enter submits, Shift+Enter starts a new line, Escape
escapes, and Tab moves on (the keyboard must be able to leave the box)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit


class SubmitEdit(QPlainTextEdit):
    submit = Signal()
    escape = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setTabChangesFocus(True)

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not e.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submit.emit()
        elif e.key() == Qt.Key.Key_Escape:
            self.escape.emit()
        else:
            super().keyPressEvent(e)
