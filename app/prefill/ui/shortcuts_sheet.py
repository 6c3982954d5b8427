"""The shortcuts sheet (Ctrl+/): every window shortcut, as `shortcuts.sheet_rows` reads them from
the one table that installs them, and the keys of the message box, the transcript and dialogs.

The keys are drawn as key caps beside what they do, under a plain heading for where they work
("Anywhere in the window", "Message box"…): no table grid, no column headers.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QGridLayout,
    QLabel,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import COLUMN, SPACE


class ShortcutsSheet(QDialog):
    """Key caps and what they do, grouped by where they work. Escape or Close shuts it; ``body`` (the
    scrolling list) takes the keyboard, so the arrows and Page Up/Down scroll it."""

    def __init__(self, rows: list[tuple[str, str, str]], parent: QWidget | None = None):
        """`rows`: (keys, what they do, where), top to bottom."""
        super().__init__(parent)
        self.setObjectName("shortcuts-sheet")
        self.setWindowTitle("Keyboard shortcuts")
        self.setAccessibleName("Keyboard shortcuts")
        self._caps: list[QLabel] = []
        inner = QWidget()
        inner.setObjectName("shortcuts-rows")
        grid = QGridLayout(inner)
        grid.setContentsMargins(SPACE.xs, 0, SPACE.md, SPACE.sm)
        grid.setHorizontalSpacing(SPACE.lg)
        grid.setVerticalSpacing(SPACE.sm)
        grid.setColumnStretch(1, 1)
        line, shown = 0, ""
        for keys, what, where in rows:
            if where != shown:  # a heading over each place's keys
                shown = where
                heading = plain_label(where)
                heading.setObjectName("shortcuts-heading")
                grid.addWidget(heading, line, 0, 1, 2)
                line += 1
            cap = plain_label(keys)
            cap.setObjectName("keycap")
            cap.setAccessibleName(f"{keys}: {what}")
            self._caps.append(cap)
            said = plain_label(what)
            said.setWordWrap(True)
            grid.addWidget(cap, line, 0, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
            grid.addWidget(said, line, 1)
            line += 1
        grid.setRowStretch(line, 1)
        self.body = QScrollArea()
        self.body.setObjectName("shortcuts-list")
        self.body.setAccessibleName("Shortcuts: keys, what they do, where")
        self.body.setFrameShape(QFrame.Shape.NoFrame)
        self.body.setWidgetResizable(True)
        self.body.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.body.setWidget(inner)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.xl, SPACE.lg, SPACE.xl, SPACE.lg)
        lay.setSpacing(SPACE.sm)
        intro = plain_label("Every button is also reachable with Tab; Space presses it.")
        intro.setObjectName("sheet-hint")
        lay.addWidget(intro)
        lay.addWidget(self.body, 1)
        lay.addWidget(buttons)
        self.resize(COLUMN.width, COLUMN.width * 3 // 4)

    def keys(self) -> list[str]:
        """The keys listed, top to bottom."""
        return [cap.text() for cap in self._caps]


def show_sheet(window: QWidget, rows: list[tuple[str, str, str]]) -> ShortcutsSheet:
    """Show the window's sheet of `rows` (made on first use; shown again, not duplicated)."""
    sheet = window.findChild(ShortcutsSheet)
    if not isinstance(sheet, ShortcutsSheet):
        sheet = ShortcutsSheet(rows, window)
    sheet.show()
    sheet.raise_()
    sheet.activateWindow()
    sheet.body.setFocus()
    return sheet
