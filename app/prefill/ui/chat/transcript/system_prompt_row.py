"""The chat's system prompt, shown above its messages when it has one: a muted row, folded to its first
line, that a click (or Space on its button) opens to the whole text."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QPalette, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QSizePolicy, QToolButton, QVBoxLayout

from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import SPACE


class SystemPromptRow(QFrame):
    """Hidden while the chat has no system prompt. ``toggle`` folds and opens it; ``body`` is the text."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("system-prompt-row")
        self.toggle = QToolButton()
        self.toggle.setObjectName("system-prompt-toggle")
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setText("System prompt")
        self.toggle.setToolTip("The system prompt this chat sends first (edit it with System prompt… in the tool bar)")
        self.toggle.setAccessibleName("System prompt: open or fold")
        self.toggle.toggled.connect(self._show)
        # The first line while folded, cut to the width it has: it never widens the chat.
        self.preview = plain_label()
        self.preview.setObjectName("system-prompt-preview")
        self.preview.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.body = plain_label()
        self.body.setObjectName("system-prompt-body")
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._mute()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.xs, SPACE.md, SPACE.xs)
        lay.setSpacing(0)
        self._lay = lay
        head = QHBoxLayout()
        head.addWidget(self.toggle)
        head.addWidget(self.preview, 1)
        lay.addLayout(head)
        lay.addWidget(self.body)
        self.text = ""
        self.set_text("")

    def _mute(self) -> None:
        """Its words in the theme's muted colour: it frames the chat, it is not part of it."""
        muted = self.palette().color(QPalette.ColorRole.PlaceholderText)
        for widget in (self.toggle, self.preview, self.body):
            palette = QPalette()  # only these two roles set: the rest follows the theme
            palette.setColor(QPalette.ColorRole.ButtonText, muted)
            palette.setColor(QPalette.ColorRole.WindowText, muted)
            widget.setPalette(palette)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.StyleChange):  # a theme switch
            # After the switch has repolished the labels: the style sheet's repolish puts back the
            # palette a label had before it, which would undo a colour set now.
            QTimer.singleShot(0, self, self._mute)

    def set_text(self, text: str) -> None:
        """The chat's system prompt ("" hides the row); a new text starts folded."""
        self.text = text.strip()
        self.body.setText(self.text)
        self.toggle.setChecked(False)
        self._show(False)
        self.setVisible(bool(self.text))

    def set_sides(self, side: int) -> None:
        """Its margin at each side, so that its words line up with the chat's column."""
        margins = self._lay.contentsMargins()
        if margins.left() != side:
            self._lay.setContentsMargins(side, margins.top(), side, margins.bottom())

    def is_open(self) -> bool:
        return self.toggle.isChecked()

    def _show(self, opened: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if opened else Qt.ArrowType.RightArrow)
        self.body.setVisible(opened)
        self.preview.setVisible(not opened)
        self._elide()

    def _elide(self) -> None:
        first = " ".join(self.text.split())
        width = max(0, self.preview.width())
        self.preview.setText(self.preview.fontMetrics().elidedText(first, Qt.TextElideMode.ElideRight, width))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()
