"""A reasoning model's thinking, shown apart above its answer: live while it thinks, folded
once the answer starts (a click opens it again), with its token count and time.

The section shows at most SHOWN characters of it, so no thinking (a model's, or an imported chat's
megabytes on one line) costs the GUI thread more than that much layout; past that, "Show all" opens
the whole of it in the plain-text viewer, and `text()` is always the whole thinking."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QFrame, QPlainTextEdit, QPushButton, QToolButton, QVBoxLayout

from prefill.ui.chat.transcript.full_text import FullTextViewer, OpenViewer

MAX_OPEN_HEIGHT = 220  # px: a long thinking scrolls inside its section, not the whole chat
SHOWN = 20_000  # characters of thinking in the section: its layout stays a few ms, one line or many


class ThinkingSection(QFrame):
    """The header is a toggle; the body is plain text (thinking is not rendered as markdown).
    Appending costs what the new text costs."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("thinking")
        self.toggle = QToolButton()
        self.toggle.setObjectName("thinking-toggle")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setAutoRaise(True)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        self.body = QPlainTextEdit()
        self.body.setObjectName("thinking-body")
        self.body.setReadOnly(True)
        self.body.setFrameShape(QFrame.Shape.NoFrame)
        self.body.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 4)
        lay.setSpacing(0)
        self.show_all_button = QPushButton()
        self.show_all_button.setObjectName("thinking-show-all")
        self.show_all_button.clicked.connect(self.show_all)
        self.show_all_button.hide()
        lay.addWidget(self.toggle)
        lay.addWidget(self.body)
        lay.addWidget(self.show_all_button, 0, Qt.AlignmentFlag.AlignLeft)
        self._parts: list[str] = []  # the whole thinking, as it came
        self._length = 0
        self._shown = 0  # of which the body holds the first _shown characters
        self._viewer = OpenViewer()
        self._tokens = 0
        self._seconds: float | None = None  # set once the answer has started
        self._user_chose = False  # a click wins over folding by itself
        self.hide()
        self._set_open(True)
        self._update_title()

    # --- content -----------------------------------------------------------------------
    def set_text(self, text: str) -> None:
        self._parts, self._length, self._shown = [text], len(text), min(len(text), SHOWN)
        self.body.setPlainText(text[:SHOWN])
        self._update_show_all()
        self.setVisible(bool(text))

    def append(self, text: str) -> None:
        if not text:
            return
        self._parts.append(text)
        self._length += len(text)
        if self._shown < SHOWN:
            piece = text[: SHOWN - self._shown]
            self._shown += len(piece)
            cursor = self.body.textCursor()
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(piece)
            self.body.verticalScrollBar().setValue(self.body.verticalScrollBar().maximum())
        self._update_show_all()
        self.show()

    def text(self) -> str:
        """The whole thinking (the section may show only its first SHOWN characters)."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def show_all(self) -> FullTextViewer:
        """The whole thinking in the plain-text viewer."""
        return self._viewer.show(self.text(), "Thinking: all of it", self.window())

    @property
    def viewer(self) -> FullTextViewer | None:
        """The whole thinking's viewer, while it is open."""
        return self._viewer.viewer

    def _update_show_all(self) -> None:
        hidden = self._length - self._shown
        self.show_all_button.setVisible(hidden > 0)
        if hidden > 0:
            self.show_all_button.setText(f"Show all ({hidden:,} more characters)")

    def is_open(self) -> bool:
        return self.toggle.isChecked()

    # --- state -------------------------------------------------------------------------
    def set_figures(self, figures: dict[str, Any]) -> None:
        """Token count and time from the answer's figures (live or final)."""
        self._tokens = int(figures.get("reasoning_tokens") or 0)
        ttft, answer = float(figures.get("ttft_ms") or 0.0), float(figures.get("answer_ttft_ms") or 0.0)
        self._seconds = (answer - ttft) / 1000 if answer > 0 else None
        self._update_title()

    def answer_started(self) -> None:
        """The answer proper began: fold the thinking away, unless the user opened it."""
        if not self._user_chose:
            self._set_open(False)

    def finished(self, from_history: bool) -> None:
        if from_history and not self._user_chose:
            self._set_open(False)

    def _update_title(self) -> None:
        tokens = f"{self._tokens:,} tokens" if self._tokens else ""
        if self._seconds is None:
            title = "Thinking…" + (f" {tokens}" if tokens else "")
        else:
            title = f"Thought for {self._seconds:.1f} s" + (f" · {tokens}" if tokens else "")
        self.toggle.setText(title)

    def _set_open(self, open_: bool) -> None:
        self.toggle.blockSignals(True)
        self.toggle.setChecked(open_)
        self.toggle.blockSignals(False)
        self._show_body(open_)

    def _show_body(self, open_: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)
        self.body.setVisible(open_)

    def _fit_height(self, *_args: object) -> None:
        lines = max(1, int(self.body.document().size().height()))
        height = lines * self.body.fontMetrics().lineSpacing() + 2 * int(self.body.document().documentMargin()) + 4
        self.body.setFixedHeight(min(MAX_OPEN_HEIGHT, height))

    def _on_toggle_toggled(self, checked: bool) -> None:
        self._user_chose = True
        self._show_body(checked)
