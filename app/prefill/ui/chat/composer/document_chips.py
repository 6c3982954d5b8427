"""The chat's documents in the message box: a chip per file or folder attached (or one for the collection
it reads), each with its ×. Names come from outside: shown as plain text, the whole path on hover."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QToolButton, QWidget

from prefill.session.document_chats import ChatDocs
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.tokens import ICON, SPACE


class _Chip(QFrame):
    def __init__(self, text: str, tip: str, remove_tip: str, strip: DocumentChips, key: str):
        super().__init__()
        self.setObjectName("document-chip")  # drawn by the composer's style sheet (styles/composer.py)
        self.setToolTip(tooltip(tip))
        row = QHBoxLayout(self)
        row.setContentsMargins(SPACE.sm, SPACE.xxs, SPACE.xxs, SPACE.xxs)
        row.setSpacing(SPACE.xs)
        mark = QToolButton()  # an icon drawn at paint time, so it follows a theme switch; not a stop for Tab
        mark.setObjectName("document-chip-mark")
        mark.setIcon(icon("document"))
        mark.setIconSize(QSize(ICON.inline, ICON.inline))
        mark.setAutoRaise(True)
        mark.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        mark.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        row.addWidget(mark)
        self.label = plain_label(text)
        self.label.setObjectName("document-chip-name")
        row.addWidget(self.label)
        self.remove = QToolButton()
        self.remove.setObjectName("document-remove")
        self.remove.setText("×")
        self.remove.setIcon(icon("close"))
        self.remove.setIconSize(QSize(ICON.inline, ICON.inline))
        self.remove.setAutoRaise(True)
        self.remove.setToolTip(tooltip(remove_tip))
        self.remove.setAccessibleName(remove_tip)
        self.remove.clicked.connect(lambda: strip.removed.emit(key))
        row.addWidget(self.remove)


class DocumentChips(QWidget):
    """A row of chips: the chat's files and folders, or the collection it reads.

    Signals:
        removed(str): a chip's × was clicked: the path it stands for (a collection's chip: its name).
    """

    removed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("document-chips")
        self.docs: ChatDocs | None = None
        self.chips: list[_Chip] = []
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.setSpacing(SPACE.xs)
        self._row.addStretch(1)
        self.hide()

    def show_documents(self, docs: ChatDocs | None) -> None:
        for chip in self.chips:
            self._row.removeWidget(chip)
            chip.deleteLater()
        self.docs = docs
        self.chips = []
        if docs is not None and docs.shared:
            self.chips.append(_Chip(f"Collection: {docs.collection}", f"This chat reads the collection "
                                    f"{docs.collection} (shared with other chats).",
                                    "Stop reading this collection in this chat", self, docs.collection))
        elif docs is not None:
            for p in docs.paths:  # no file is looked at here (the GUI thread never waits on the disk)
                self.chips.append(_Chip(Path(p).name or p, p, f"Detach {Path(p).name} from this chat", self, p))
        for i, chip in enumerate(self.chips):
            self._row.insertWidget(i, chip)
        self.setVisible(bool(self.chips))

    def names(self) -> list[str]:
        """What the chips say (for tests and the screenshot's check)."""
        return [c.label.text() for c in self.chips]
