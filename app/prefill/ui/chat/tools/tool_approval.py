"""The question above the input box when the model wants to run a tool: the tool's name and its
arguments (as the model wrote them, plain text), and Allow once / Always allow this tool / Deny."""

from __future__ import annotations

import json

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout

from prefill.engine.message import ToolCall
from prefill.session.tool_loop import Decision
from prefill.ui.widgets.plain_text import plain_label

MAX_ARGUMENT_LINES = 8  # taller arguments scroll inside the box


def readable_arguments(arguments: str) -> str:
    """The call's arguments indented when they are JSON, else as the model wrote them."""
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


class ToolApprovalPanel(QFrame):
    """Hidden until `ask(call)`; a button answers and hides it.

    Signals:
        answered(object): the person's Decision for the call shown.
    """

    answered = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("tool-approval")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.title = plain_label()
        self.title.setObjectName("tool-approval-title")
        self.title.setWordWrap(True)
        self.arguments = QPlainTextEdit()
        self.arguments.setObjectName("tool-approval-arguments")
        self.arguments.setReadOnly(True)
        self.allow_once = QPushButton("Allow once")
        self.always = QPushButton("Always allow this tool")
        self.deny = QPushButton("Deny")
        self.allow_once.setDefault(True)
        self.allow_once.clicked.connect(lambda: self._answer(Decision.ALLOW_ONCE))
        self.always.clicked.connect(lambda: self._answer(Decision.ALWAYS_ALLOW))
        self.deny.clicked.connect(lambda: self._answer(Decision.DENY))
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for b in (self.deny, self.always, self.allow_once):
            buttons.addWidget(b)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(10, 8, 10, 8)
        lay.addWidget(self.title)
        lay.addWidget(self.arguments)
        lay.addLayout(buttons)
        self.call: ToolCall | None = None
        self.hide()

    def ask(self, call: ToolCall) -> None:
        """Show the call and wait for a click (the engine thread waits; this never blocks)."""
        self.call = call
        self.title.setText(f"The model wants to run the tool {call.name}. Run it with these arguments?")
        text = readable_arguments(call.arguments)
        self.arguments.setPlainText(text)
        lines = min(MAX_ARGUMENT_LINES, max(2, text.count("\n") + 1))
        self.arguments.setFixedHeight(lines * self.arguments.fontMetrics().lineSpacing() + 14)
        self.show()
        self.allow_once.setFocus()

    def settle(self) -> None:
        """The question is over (answered, or Stop): hide it."""
        self.call = None
        self.hide()

    def _answer(self, decision: Decision) -> None:
        if self.call is not None:
            self.answered.emit(decision)
