"""The server's slots as a list of rows: each slot a small card with its number, its state, the request
it answers and its figures, each figure with its unit (no grid, no column header); a model's line
across the list above its slots when the server holds several.

The list follows a `SlotTableModel` (ui/server/slot_model.py): a reset builds the rows again, a changed row
updates its labels only, so a snapshot a few times a second lays nothing out anew.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from prefill.engine.batch.runtime import MAX_SEQUENCES
from prefill.ui.server.slot_model import SlotTableModel
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.tokens import SPACE

Index = QModelIndex | QPersistentModelIndex
EMPTY = "The server's request slots show here while it serves."
REQUEST_EMS, FIGURES_EMS = 5, 8  # the least a request's name and a slot's figures are cut to, in ems
HEADING_EMS = 12  # the least a model's line above its slots is cut to
STATES = ("prefill", "decode", "idle")  # the words a slot's state takes (the widest sets the column)


class ElidedLabel(QLabel):
    """A one-line label that asks for its whole text's width but takes less when the row has less,
    down to `least` ems, shortening its text (`mode`) to fit; the whole text is its tooltip."""

    def __init__(self, least: int, mode: Qt.TextElideMode = Qt.TextElideMode.ElideMiddle) -> None:
        super().__init__()
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.full = ""
        self._least, self._mode = least, mode

    def set_full(self, text: str) -> None:
        if text != self.full:
            self.full = text
            self.setToolTip(tooltip(text))
            self.updateGeometry()
            self._fit()

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(self.fontMetrics().horizontalAdvance(self.full) + 2 * self.margin(), hint.height())

    def minimumSizeHint(self) -> QSize:
        least = min(self.fontMetrics().horizontalAdvance("M") * self._least, self.sizeHint().width())
        return QSize(least, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        self.setText(self.fontMetrics().elidedText(self.full, self._mode, max(self.contentsRect().width(), 0)))


def slot_figures(tokens: str, cells: str, rate: str, drafts: str) -> str:
    """A slot's figures in words, each with its unit, its speed first: "7 tok/s · 40 + 6 tokens · 45 memory
    cells" (and "25 / 40 drafts taken" while it speculates)."""
    words = [f"{rate} tok/s" if rate else "", f"{tokens} tokens" if tokens else "",
             f"{cells} memory cells" if cells else "", f"{drafts} drafts taken" if drafts else ""]
    return " · ".join(w for w in words if w)


class SlotRow(QFrame):
    """One slot: "Slot 0", its state, its request (shortened to fit) and its figures."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("server-slot")
        fm = self.fontMetrics()
        self.number = plain_label()
        self.number.setObjectName("slot-number")
        self.number.setMinimumWidth(fm.horizontalAdvance(f"Slot {MAX_SEQUENCES - 1}"))
        self.state = plain_label()
        self.state.setObjectName("slot-state")
        self.state.setMinimumWidth(max(fm.horizontalAdvance(s) for s in STATES))
        self.request = ElidedLabel(REQUEST_EMS)
        self.request.setObjectName("slot-request")
        self.figures = ElidedLabel(FIGURES_EMS, Qt.TextElideMode.ElideRight)  # whole in its tooltip when cut
        self.figures.setObjectName("slot-figures")
        self.figures.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.xs, SPACE.md, SPACE.xs)
        lay.setSpacing(SPACE.md)
        lay.addWidget(self.number)
        lay.addWidget(self.state)
        lay.addWidget(self.request, 1)
        lay.addWidget(self.figures, 2)  # the figures before the request's name when the row is short

    def show_values(self, values: list[str]) -> None:
        """The model's columns for this slot: slot, state, request, tokens, memory cells, tok/s, drafts."""
        slot, state, request, tokens, cells, rate, drafts = values
        self.number.setText(f"Slot {slot}")
        if state != self.state.text():
            self.state.setText(state)
            self.state.setProperty("busy", state != "idle")
            self.state.style().unpolish(self.state)  # the sheet colours a busy state
            self.state.style().polish(self.state)
        self.request.set_full(request)
        self.figures.set_full(slot_figures(tokens, cells, rate, drafts))


class SlotList(QScrollArea):
    """The rows of `model`, in a scrolling column: a `SlotRow` per slot, a heading per model."""

    def __init__(self, model: SlotTableModel) -> None:
        super().__init__()
        self.setObjectName("server-slots")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.model = model
        inside = QWidget()
        inside.setObjectName("server-slots-inside")
        self.column = QVBoxLayout(inside)
        self.column.setContentsMargins(0, 0, SPACE.xxs, 0)  # the rows' right border clear of the scroll bar
        self.column.setSpacing(SPACE.xs)
        self.empty = plain_label(EMPTY)
        self.empty.setObjectName("slots-empty")
        self.empty.setWordWrap(True)
        self.column.addWidget(self.empty)
        self.column.addStretch(1)
        self.setWidget(inside)
        self.rows: list[SlotRow | ElidedLabel] = []  # a SlotRow per slot, an ElidedLabel per model's heading
        model.modelReset.connect(self._on_model_reset)
        model.dataChanged.connect(self._on_model_data_changed)
        self._on_model_reset()

    def headings(self) -> list[bool]:
        """Whether each row shown is a model's heading (else a slot)."""
        return [not isinstance(r, SlotRow) for r in self.rows]

    def _on_model_reset(self) -> None:
        for row in self.rows:
            self.column.removeWidget(row)
            row.hide()  # gone from the screen now; deleted when the event loop runs
            row.deleteLater()
        self.rows = []
        for r in range(self.model.rowCount()):
            if self.model.is_heading(r):
                heading = ElidedLabel(HEADING_EMS, Qt.TextElideMode.ElideRight)  # a model's id: plain text
                heading.setObjectName("slot-heading")
                self.rows.append(heading)
            else:
                self.rows.append(SlotRow())
            self.column.insertWidget(len(self.rows) - 1, self.rows[-1])
            self._show(r)
        self.empty.setVisible(not self.rows)

    def _on_model_data_changed(self, top: Index, bottom: Index, _roles: object = None) -> None:
        for r in range(top.row(), min(bottom.row() + 1, len(self.rows))):
            self._show(r)

    def _show(self, r: int) -> None:
        row = self.rows[r]
        values = [str(self.model.data(self.model.index(r, c)) or "") for c in range(self.model.columnCount())]
        if isinstance(row, SlotRow):
            row.show_values(values)
        else:
            row.set_full(values[0])
