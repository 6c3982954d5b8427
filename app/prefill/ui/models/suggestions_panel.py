"""Suggested models for this machine: the curated table of `hub.suggested`, filtered by its memory.

A double click (or Enter) on a row asks the page to open that repository with the file
selected; the page then shows the header's own fit estimate and the model card.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from prefill.engine.llama.memory_fit import FitEstimate
from prefill.engine.units import format_bytes
from prefill.hub.model_names import display_name
from prefill.hub.suggested import Suggestion
from prefill.ui.models.fit_badge import FitBadge
from prefill.ui.widgets.plain_text import plain_label, tooltip

_ROLE = Qt.ItemDataRole.UserRole


class SuggestionsPanel(QWidget):
    """The suggestions: name and fit badge, and under them the size and what it is.

    Signals:
        chosen(object): a row was opened: its `Suggestion`.
    """

    chosen = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.suggestions: list[tuple[Suggestion, FitEstimate]] = []
        self.note = plain_label("Working out what fits this machine…")
        self.note.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setObjectName("suggested-models")
        self.tree.setAccessibleName("Suggested models")
        self.tree.setRootIsDecorated(False)
        self.tree.setHeaderLabels(["Model", "Fit on this machine"])
        self.tree.setColumnWidth(0, 188)
        self.tree.header().setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.note)
        layout.addWidget(self.tree, 1)
        self.tree.itemActivated.connect(self._on_tree_item_activated)

    def fill(self, found: list[tuple[Suggestion, FitEstimate]]) -> None:
        self.suggestions = list(found)
        self.tree.clear()
        for s, e in found:
            item = QTreeWidgetItem([display_name(s.filename, s.repo_id), ""])
            item.setData(0, _ROLE, s)
            item.setToolTip(0, tooltip(f"{s.what}\n{s.repo_id}/{s.filename}"))
            self.tree.addTopLevelItem(item)
            what = QTreeWidgetItem([f"{format_bytes(s.size)} · {s.what}", ""])
            what.setFlags(Qt.ItemFlag.ItemIsEnabled)
            badge = FitBadge(compact=True)
            badge.set_estimate(e)
            self.tree.setItemWidget(item, 1, badge)
            item.addChild(what)
            what.setFirstColumnSpanned(True)  # the words get the whole width
            item.setExpanded(True)
        self.note.setText("Models that run on this machine's memory (double-click one to see its files):"
                          if found else "None of the suggested models fits this machine's free memory.")

    def names(self) -> list[str]:
        return [item.text(0) for i in range(self.tree.topLevelItemCount()) if (item := self.tree.topLevelItem(i))]

    def _on_tree_item_activated(self, item: QTreeWidgetItem, _column: int) -> None:
        parent = item.parent()
        s = item.data(0, _ROLE) or (parent.data(0, _ROLE) if parent is not None else None)
        if isinstance(s, Suggestion):
            self.chosen.emit(s)
