"""The chat: one MessageWidget per transcript row, following the TranscriptModel.

A flush appends only the new text of the streaming row to its widget; no other
row is touched, so the cost does not grow with the answer or the conversation.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

from prefill.ui.message_widget import MessageWidget
from prefill.ui.transcript_model import Roles, TranscriptModel


class ChatView(QScrollArea):
    """Signals:
        message_action(str, int): an action ("copy", "edit", "delete", "regenerate", "retry") on a row.
    """

    message_action = Signal(str, int)

    def __init__(self, model: TranscriptModel, code_palette: Any = None):
        super().__init__()
        self.model = model
        self.code_palette = code_palette
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        inner.setObjectName("chat-inner")
        self._layout = QVBoxLayout(inner)
        self._layout.setContentsMargins(12, 12, 12, 12)
        self._layout.setSpacing(10)
        self._layout.addStretch(1)
        self.setWidget(inner)
        self.widgets: list[MessageWidget] = []
        self._seen: list[int] = []  # chunks of each row already given to its widget
        self._seen_thinking: list[int] = []  # the same for each row's thinking
        self._stick = True
        self.verticalScrollBar().rangeChanged.connect(self._on_scrollbar_range_changed)
        self.verticalScrollBar().valueChanged.connect(self._on_scrollbar_value_changed)
        model.modelReset.connect(self._on_model_reset)
        model.rowsInserted.connect(self._on_model_rows_inserted)
        model.rowsRemoved.connect(self._on_model_rows_removed)
        model.dataChanged.connect(self._on_model_data_changed)

    def set_code_palette(self, palette: Any) -> None:
        self.code_palette = palette
        self._on_model_reset()

    # --- following the model -------------------------------------------------------------
    def _on_model_reset(self) -> None:
        for w in self.widgets:
            w.setParent(None)
            w.deleteLater()
        self.widgets, self._seen, self._seen_thinking = [], [], []
        self._on_model_rows_inserted(QModelIndex(), 0, self.model.rowCount() - 1)
        self._stick = True

    def _on_model_rows_inserted(self, _parent: QModelIndex, first: int, last: int) -> None:
        for row in range(first, last + 1):
            r = self.model.row(row)
            w = MessageWidget(r.role, self.code_palette)
            w.action.connect(self._on_widget_action)
            text, n = self.model.chunks_since(row, 0)
            thinking, n_thinking = self.model.reasoning_since(row, 0)
            w.set_reasoning(thinking, from_history=not r.streaming)
            if r.streaming:
                w.append(text)
                w.set_streaming(True)
            else:
                w.set_content(text)
            w.set_figures(r.figures, r.finish_reason)
            self._layout.insertWidget(row, w)
            self.widgets.insert(row, w)
            self._seen.insert(row, n)
            self._seen_thinking.insert(row, n_thinking)
        self._update_retry()

    def _on_model_rows_removed(self, _parent: QModelIndex, first: int, last: int) -> None:
        for w in self.widgets[first : last + 1]:
            w.setParent(None)
            w.deleteLater()
        del self.widgets[first : last + 1]
        del self._seen[first : last + 1]
        del self._seen_thinking[first : last + 1]
        self._update_retry()

    def _update_retry(self) -> None:
        """A question left without an answer (its answer failed) offers Retry."""
        last = next((i for i in range(len(self.widgets) - 1, -1, -1) if self.widgets[i].role != "notice"), -1)
        for i, w in enumerate(self.widgets):
            w.set_retry_visible(i == last and w.role == "user")

    def _on_model_data_changed(self, top: QModelIndex, bottom: QModelIndex, roles: list[int]) -> None:
        for row in range(top.row(), bottom.row() + 1):
            w, r = self.widgets[row], self.model.row(row)
            if not roles or Roles.REASONING in roles:
                if r.streaming:
                    text, self._seen_thinking[row] = self.model.reasoning_since(row, self._seen_thinking[row])
                    w.append_reasoning(text)
                else:
                    text, self._seen_thinking[row] = self.model.reasoning_since(row, 0)
                    w.set_reasoning(text)
            if not roles or Roles.CONTENT in roles:
                if r.streaming:
                    text, self._seen[row] = self.model.chunks_since(row, self._seen[row])
                    w.append(text)
                else:
                    text, self._seen[row] = self.model.chunks_since(row, 0)
                    w.set_content(text)
            if not roles or Roles.STREAMING in roles:
                w.set_streaming(r.streaming)
                if not r.streaming:
                    w.finish()
            if not roles or Roles.FIGURES in roles or Roles.FINISH_REASON in roles:
                w.set_figures(r.figures, r.finish_reason)

    def _on_widget_action(self, name: str, widget: MessageWidget) -> None:
        if widget in self.widgets:
            row = self.widgets.index(widget)
            if name == "copy":
                widget.copy_text()
            self.message_action.emit(name, row)

    # --- keep the newest text in sight while the user has not scrolled up ------------------
    def _on_scrollbar_value_changed(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._stick = value >= bar.maximum() - 8

    def _on_scrollbar_range_changed(self, _lo: int, hi: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(hi)
