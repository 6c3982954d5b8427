"""One tool call in the chat, folded like the model's thinking: the header says which tool, how
long it took and how it ended (running, denied, error, stopped, not run); a click opens its
arguments and result as plain text, a long result cut."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QPlainTextEdit, QToolButton, QVBoxLayout

MAX_OPEN_HEIGHT = 260  # px: a long result scrolls inside its section
MAX_SHOWN_CHARS = 20_000  # a result longer than this is cut in the chat (the model got it whole)


def call_state(figures: dict[str, Any], running: bool) -> str:
    """How a call ended, in a word or two, from its row's figures."""
    if running:
        return "running…"
    if figures.get("denied"):
        return "denied"
    if figures.get("not_run"):
        return "not run"
    if figures.get("stopped"):
        return "stopped"
    elapsed = f"{float(figures.get('elapsed_ms') or 0):.0f} ms"
    return f"error · {elapsed}" if figures.get("is_error") else elapsed


def shown_result(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return text[:MAX_SHOWN_CHARS] + f"\n… ({len(text) - MAX_SHOWN_CHARS:,} more characters not shown)"


class ToolCallSection(QFrame):
    """The header is a toggle (folded at first); the body is plain text, never markup."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("tool-call")
        self.toggle = QToolButton()
        self.toggle.setObjectName("tool-call-toggle")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setAutoRaise(True)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        self.body = QPlainTextEdit()
        self.body.setObjectName("tool-call-body")
        self.body.setReadOnly(True)
        self.body.setFrameShape(QFrame.Shape.NoFrame)
        self.body.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 2)
        lay.setSpacing(0)
        lay.addWidget(self.toggle)
        lay.addWidget(self.body)
        self._figures: dict[str, Any] = {}
        self._result = ""
        self._running = False
        self._on_toggle_toggled(False)

    def set_call(self, figures: dict[str, Any], running: bool) -> None:
        """The call's name, arguments and how it ended (the row's figures)."""
        self._figures, self._running = dict(figures), running
        self._update()

    def set_result(self, text: str) -> None:
        self._result = text
        self._update()

    def is_open(self) -> bool:
        return self.toggle.isChecked()

    def title(self) -> str:
        return self.toggle.text()

    def text(self) -> str:
        return self.body.toPlainText()

    def _update(self) -> None:
        name = str(self._figures.get("tool") or "tool")
        self.toggle.setText(f"Tool: {name} · {call_state(self._figures, self._running)}")
        self.setProperty("failed", bool(self._figures.get("is_error")) and not self._running)
        arguments = str(self._figures.get("arguments") or "{}")
        result = "(running)" if self._running else shown_result(self._result)
        self.body.setPlainText(f"Arguments:\n{arguments}\n\nResult:\n{result}")

    def _fit_height(self, *_args: object) -> None:
        lines = max(1, int(self.body.document().size().height()))
        height = lines * self.body.fontMetrics().lineSpacing() + 2 * int(self.body.document().documentMargin()) + 4
        self.body.setFixedHeight(min(MAX_OPEN_HEIGHT, height))

    def _on_toggle_toggled(self, checked: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow)
        self.body.setVisible(checked)
