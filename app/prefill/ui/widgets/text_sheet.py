"""A sheet that asks for one text: a chat's name, a system prompt.

Window-modal (the rest of the window waits; other windows do not), with a title, a line saying what
the text is for, a roomy field holding the text as it is now, and Cancel / Save. One line: Enter
saves. Several lines: Enter starts a new line and Ctrl+Enter saves. Esc cancels either way. Its text
is plain: a field never reads markup.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import COLUMN, SPACE

MULTILINE_ROWS = 12  # the lines a multi-line field shows before it scrolls


def primary(button: QPushButton) -> QPushButton:
    """Mark ``button`` as the one the dialog is for (drawn in the highlight colour by the style sheet)."""
    button.setProperty("primary", True)
    return button


class TextSheet(QDialog):
    """Asks for one text; emits :attr:`saved` with it, stripped, when Save is pressed.

    Args:
        parent: The widget whose window the sheet belongs to.
        title: The sheet's heading (and window title).
        hint: One line saying what the text is for.
        text: The text as it is now (selected, so typing replaces it).
        multiline: A field of several lines (Ctrl+Enter saves) instead of one (Enter saves).
        allow_empty: Save takes an empty text (clearing it); otherwise Save waits for some text.
        save_text: The Save button's word.

    Signals:
        saved(str): the text, stripped of the spaces around it.
    """

    saved = Signal(str)

    def __init__(self, parent: QWidget, title: str, hint: str, text: str, *, multiline: bool = False,
                 allow_empty: bool = False, save_text: str = "Save", placeholder: str = ""):
        super().__init__(parent)
        self.setObjectName("text-sheet")
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        if sys.platform == "darwin":  # slides down from the window's title bar
            self.setWindowFlag(Qt.WindowType.Sheet)
        self.allow_empty = allow_empty
        heading = plain_label(title)
        heading.setObjectName("sheet-title")
        about = plain_label(hint)
        about.setObjectName("sheet-hint")
        about.setWordWrap(True)
        self.field: QLineEdit | QPlainTextEdit
        if multiline:
            box = QPlainTextEdit()
            box.setPlainText(text)
            box.selectAll()
            box.setTabChangesFocus(True)
            box.setMinimumHeight(box.fontMetrics().lineSpacing() * MULTILINE_ROWS)
            box.installEventFilter(self)
            box.textChanged.connect(self._on_field_changed)
            self.field = box
            keys = "Enter starts a new line · Ctrl+Enter saves · Esc cancels"
        else:
            line = QLineEdit(text)
            line.selectAll()
            line.textChanged.connect(self._on_field_changed)
            line.returnPressed.connect(self._on_save)
            self.field = line
            keys = "Enter saves · Esc cancels"
        self.field.setObjectName("sheet-field")
        self.field.setAccessibleName(title)
        if placeholder:
            self.field.setPlaceholderText(placeholder)
        self.keys = plain_label(keys)
        self.keys.setObjectName("sheet-keys")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.save_button = primary(self.buttons.button(QDialogButtonBox.StandardButton.Save))
        self.save_button.setText(save_text)
        self.save_button.setDefault(True)
        self.buttons.accepted.connect(self._on_save)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.xl, SPACE.xl, SPACE.xl, SPACE.lg)
        lay.setSpacing(SPACE.sm)
        lay.addWidget(heading)
        lay.addWidget(about)
        lay.addSpacing(SPACE.xs)
        lay.addWidget(self.field, 1)
        lay.addWidget(self.keys)
        lay.addSpacing(SPACE.sm)
        lay.addWidget(self.buttons)
        self.setMinimumWidth(COLUMN.min_width)
        if multiline:
            self.resize(COLUMN.width, self.sizeHint().height())
        self._on_field_changed()
        self.field.setFocus()

    def text(self) -> str:
        """The field's text, stripped."""
        field = self.field
        return (field.toPlainText() if isinstance(field, QPlainTextEdit) else field.text()).strip()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (watched is self.field and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent)
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and event.modifiers() & Qt.KeyboardModifier.ControlModifier):
            self._on_save()
            return True
        return super().eventFilter(watched, event)

    def _on_field_changed(self) -> None:
        self.save_button.setEnabled(self.allow_empty or bool(self.text()))

    def _on_save(self) -> None:
        if not self.save_button.isEnabled() or not self.isVisible():  # Enter reaches Save once only
            return
        text = self.text()
        self.accept()
        self.saved.emit(text)
