"""A compaction's summary in the chat, and the rows it folded.

The summary row is folded: its header says what it did ("4 earlier turns summarised: 1,900 tokens →
210"); a click on it (or Space) opens the summary the model wrote, shown as plain text (the model's
own words: never rich text). Its actions: Copy, Edit (in place: the next turn reads the edited text)
and Remove (Undo follows; the model reads the turns again). The rows before the chat's last summary
stay, dimmed and titled as folded: the model no longer reads them.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGraphicsOpacityEffect, QSizePolicy, QToolButton

from prefill.ui.chat.transcript.inline_editor import InlineEditor
from prefill.ui.chat.transcript.message_widget import ROLE_TITLES, MessageWidget
from prefill.ui.chat.transcript.summary_rows import SUMMARY, WORKING, summary_note
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import SPACE

FOLDED_OPACITY = 0.5  # of a folded row's text
FOLDED_TITLE = " · folded into the summary below"
TIPS = {
    "edit": "Edit the summary: the next turn reads your words",
    "delete": "Remove the summary (Undo follows): the model reads the earlier turns again",
}


class SummaryWidget(MessageWidget):
    """A summary row: ``toggle`` (its header, with ``note``) opens and folds ``summary_text``."""

    def __init__(self, code_palette: Any = None):
        super().__init__(SUMMARY, code_palette)
        self.setProperty("folded-summary", True)
        self._text = ""
        self._figures: dict[str, Any] = {}
        self.body.hide()  # the summary is the model's words: a plain-text label shows it
        self.figures.hide()
        self.title.hide()
        self.toggle = QToolButton()
        self.toggle.setObjectName("summary-toggle")
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setText(ROLE_TITLES[SUMMARY])
        self.toggle.setToolTip("Open or fold the summary the model wrote of the earlier turns")
        self.toggle.setAccessibleName("Summary of the earlier turns: open or fold")
        self.toggle.toggled.connect(self._show)
        self.note = plain_label()
        self.note.setObjectName("summary-note")
        self.note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.summary_text = plain_label()
        self.summary_text.setObjectName("summary-text")
        self.summary_text.setWordWrap(True)
        self.summary_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary_text.setAccessibleName("The summary of the earlier turns")
        bar = self.head
        for i in reversed(range(bar.count())):  # the base's stretch: the note takes the room instead
            item = bar.itemAt(i)
            if item is not None and item.spacerItem() is not None:
                bar.removeItem(item)
        bar.insertWidget(0, self.toggle)
        bar.insertWidget(1, self.note, 1)
        self.content.insertWidget(self.content.indexOf(self.body), self.summary_text)
        outer = self.layout()
        if outer is not None:
            outer.setContentsMargins(SPACE.md, SPACE.xs, SPACE.md, SPACE.xs)  # inside its dashed outline
        self.buttons["delete"].setText("Remove")
        for name, tip in TIPS.items():
            self.buttons[name].setToolTip(tip)
            self.buttons[name].setAccessibleName(tip)
        self._show(False)

    def is_open(self) -> bool:
        return self.toggle.isChecked()

    def _show(self, opened: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if opened else Qt.ArrowType.RightArrow)
        self.summary_text.setVisible(opened and self.editor is None and bool(self._text))

    def _update_note(self) -> None:
        self.note.setText(WORKING if self._streaming else summary_note(self._figures))

    # --- what the view calls ------------------------------------------------------------
    def set_content(self, text: str) -> None:
        self._text = text
        self.summary_text.setText(text)
        self._show(self.is_open())

    def append(self, text: str) -> None:
        """Nothing streams into a summary: it shows once it is written."""

    def set_reasoning(self, text: str, from_history: bool = False) -> None:
        """A summary has no thinking."""

    def text(self) -> str:
        return self._text

    def finish(self) -> None:
        """No markdown to finish."""

    def set_streaming(self, streaming: bool) -> None:
        super().set_streaming(streaming)
        self.toggle.setEnabled(not streaming)
        self._update_note()

    def set_figures(self, figures: dict[str, Any], reason: str) -> None:
        self._figures = dict(figures)
        self._update_note()

    def begin_edit(self) -> InlineEditor:
        editor = super().begin_edit()
        self._show(self.is_open())
        return editor

    def end_edit(self) -> None:
        super().end_edit()
        self.body.hide()  # the base shows its markdown body again: a summary shows its label
        self._show(self.is_open())


def mark_folded(widget: MessageWidget, folded: bool) -> None:
    """Dim a row the chat's last summary folded (the model no longer reads it), or undim it."""
    if bool(widget.property("folded")) == folded:
        return
    widget.setProperty("folded", folded)
    widget.title.setText(ROLE_TITLES.get(widget.role, widget.role) + (FOLDED_TITLE if folded else ""))
    if widget.role not in (SUMMARY, "tool"):
        widget.title.setVisible(folded or widget.role == "notice")  # the label says why the row is dimmed
    parts = (widget.summary_text, widget.note) if isinstance(widget, SummaryWidget) else (widget.body, widget.tool)
    for part in parts:
        if part is None:
            continue
        effect = part.graphicsEffect()
        if effect is None and folded:
            effect = QGraphicsOpacityEffect(part)
            effect.setOpacity(FOLDED_OPACITY)
            part.setGraphicsEffect(effect)
        if effect is not None:
            effect.setEnabled(folded)
