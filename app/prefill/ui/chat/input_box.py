"""The message box: Enter sends, Shift+Enter is a new line, Esc stops the answer."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from prefill.ui.shared.plain_text import plain_label


class _Editor(QPlainTextEdit):
    submit = Signal()
    escape = Signal()

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not e.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submit.emit()
            return
        if e.key() == Qt.Key.Key_Escape:
            self.escape.emit()
            return
        super().keyPressEvent(e)


class InputBox(QWidget):
    """Signals:
        send(str): the text to send (the box is cleared).
        stop(): Esc or the Stop button while an answer streams.
        text_changed(str): for the live token count.
    """

    send = Signal(str)
    stop = Signal()
    text_changed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.editor = _Editor()
        self.editor.setObjectName("message-input")
        self.editor.setPlaceholderText("Message the model — Enter sends, Shift+Enter for a new line, Esc stops")
        self.editor.setFixedHeight(84)
        self.count = plain_label()
        self.count.setObjectName("token-count")
        self.button = QPushButton("Send")
        self.button.setObjectName("send-button")
        self.generating = False
        row = QHBoxLayout()
        row.addWidget(self.count, 1)
        row.addWidget(self.button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 4, 12, 8)
        lay.addWidget(self.editor)
        lay.addLayout(row)
        self.editor.submit.connect(self._on_editor_submit)
        self.editor.escape.connect(self.stop)
        self.button.clicked.connect(self._on_button_clicked)
        self.editor.textChanged.connect(lambda: self.text_changed.emit(self.editor.toPlainText()))

    def set_generating(self, generating: bool) -> None:
        self.generating = generating
        self.button.setText("Stop" if generating else "Send")

    def set_count(self, tokens: int, n_ctx: int) -> None:
        self.count.setText(f"next prompt: {tokens:,} of {n_ctx:,} tokens")

    def _on_editor_submit(self) -> None:
        if self.generating:
            return
        text = self.editor.toPlainText().strip()
        if text:
            self.editor.clear()
            self.send.emit(text)

    def _on_button_clicked(self) -> None:
        if self.generating:
            self.stop.emit()
        else:
            self._on_editor_submit()
