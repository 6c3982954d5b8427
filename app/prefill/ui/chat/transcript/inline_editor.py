"""Editing a message where it stands in the transcript: the text wraps, Enter saves, Escape cancels."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout

from prefill.ui.chat.transcript.submit_edit import SubmitEdit

MIN_LINES, MAX_LINES = 2, 14  # the box grows with the text between these, then scrolls


class InlineEditor(QFrame):
    """A message's text in an editable box with Save and Cancel.

    Signals:
        saved(str): Save (or Enter) with this text, whitespace trimmed; not sent for an empty text.
        cancelled(): Cancel (or Escape).
    """

    saved = Signal(str)
    cancelled = Signal()

    def __init__(self, text: str):
        super().__init__()
        self.setObjectName("inline-editor")
        self.text = SubmitEdit()  # Tab reaches Save and Cancel; a message needs no tab characters
        self.text.setObjectName("inline-editor-text")
        self.text.setAccessibleName("Edit message")
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.text.setPlainText(text)
        self.save = QPushButton("Save")
        self.save.setToolTip("Save and answer again (Enter; Shift+Enter for a new line)")
        self.cancel = QPushButton("Cancel")
        self.cancel.setToolTip("Keep the message as it was (Escape)")
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel)
        buttons.addWidget(self.save)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.text)
        lay.addLayout(buttons)
        self.text.submit.connect(self._on_save)
        self.save.clicked.connect(self._on_save)
        self.text.escape.connect(self.cancelled)
        self.cancel.clicked.connect(self.cancelled)
        self.text.textChanged.connect(self._fit)
        self._fit()

    def begin(self) -> None:
        """Take the keyboard, the cursor at the end of the text."""
        self.text.setFocus(Qt.FocusReason.OtherFocusReason)
        self.text.moveCursor(self.text.textCursor().MoveOperation.End)

    def _on_save(self) -> None:
        text = self.text.toPlainText().strip()
        if text:
            self.saved.emit(text)

    def _fit(self) -> None:
        # As tall as its wrapped lines (the view measures the message by its size hint).
        lines = self.text.document().documentLayout().documentSize().height()  # in lines for a plain text
        shown = min(MAX_LINES, max(MIN_LINES, int(lines)))
        margins = self.text.contentsMargins()
        height = shown * self.text.fontMetrics().lineSpacing() + 2 * self.text.document().documentMargin()
        self.text.setFixedHeight(int(height) + margins.top() + margins.bottom() + 4)
