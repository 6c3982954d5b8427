"""The shortcuts sheet (Ctrl+/): every window shortcut, as `shortcuts.sheet_rows` reads them from
the one table that installs them, and the keys of the message box, the transcript and dialogs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from prefill.ui.widgets.plain_text import plain_label

KEYS_COLUMN, WHAT_COLUMN, WHERE_COLUMN = range(3)


class ShortcutsSheet(QDialog):
    """A read-only table: keys, what they do, and where they work. Escape or Close shuts it."""

    def __init__(self, rows: list[tuple[str, str, str]], parent: QWidget | None = None):
        """`rows`: (keys, what they do, where), top to bottom."""
        super().__init__(parent)
        self.setObjectName("shortcuts-sheet")
        self.setWindowTitle("Keyboard shortcuts")
        self.setAccessibleName("Keyboard shortcuts")
        self.table = QTableWidget(len(rows), 3)
        self.table.setObjectName("shortcuts-table")
        self.table.setAccessibleName("Shortcuts: keys, what they do, where")
        self.table.setHorizontalHeaderLabels(["Keys", "What it does", "Where"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(True)
        for i, row in enumerate(rows):
            for column, text in enumerate(row):
                item = QTableWidgetItem(text)  # plain text: a table item never reads markup
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                self.table.setItem(i, column, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(KEYS_COLUMN, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(WHAT_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(WHERE_COLUMN, QHeaderView.ResizeMode.ResizeToContents)
        self.table.resizeRowsToContents()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(plain_label("Every button is also reachable with Tab; Space presses it."))
        lay.addWidget(self.table, 1)
        lay.addWidget(buttons)
        self.resize(760, 560)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.table.resizeRowsToContents()  # now that the columns have their widths: no row taller than its text

    def keys(self) -> list[str]:
        """The Keys column, top to bottom."""
        items = (self.table.item(i, KEYS_COLUMN) for i in range(self.table.rowCount()))
        return [item.text() for item in items if item is not None]


def show_sheet(window: QWidget, rows: list[tuple[str, str, str]]) -> ShortcutsSheet:
    """Show the window's sheet of `rows` (made on first use; shown again, not duplicated)."""
    sheet = window.findChild(ShortcutsSheet)
    if not isinstance(sheet, ShortcutsSheet):
        sheet = ShortcutsSheet(rows, window)
    sheet.show()
    sheet.raise_()
    sheet.activateWindow()
    sheet.table.setFocus()
    return sheet
