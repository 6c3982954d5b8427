"""The Models page's details pane: the chosen repository's name and facts, Download, its files grouped
by quantisation (size, "Downloaded", fit badge: `repo_files.py`) and, under them, its model card
(`card_view.py`, the one renderer, nothing loaded)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QSplitter, QVBoxLayout, QWidget

from prefill.ui.markdown.rich_text import CodePalette
from prefill.ui.models import repo_files
from prefill.ui.models.card_view import CardView
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import SPACE

CHOOSE = "Choose a model on the left to see its files, what fits this machine, and its model card."


class DetailsPane(QWidget):
    """Title, facts and Download over the files and the card (a splitter between them)."""

    def __init__(self, palette: CodePalette | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("repo-details")
        self.title = plain_label("")
        self.title.setObjectName("repo-title")
        self.facts = plain_label(CHOOSE)
        self.facts.setObjectName("repo-facts")
        self.facts.setWordWrap(True)
        self.download_button = QPushButton("Download")
        self.download_button.setEnabled(False)
        self.files = repo_files.make_tree()
        self.card = CardView(palette)
        head = QHBoxLayout()
        words = QVBoxLayout()
        words.setSpacing(SPACE.xxs)
        words.addWidget(self.title)
        words.addWidget(self.facts)
        head.addLayout(words, 1)
        head.addWidget(self.download_button, 0, Qt.AlignmentFlag.AlignTop)
        self.files.viewport().installEventFilter(self)  # its columns follow its width
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(self.files)
        split.addWidget(self.card)
        split.setSizes([220, 300])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(SPACE.sm)
        layout.addLayout(head)
        layout.addWidget(split, 1)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        """The files' columns follow the list's width (`repo_files.fit_columns`)."""
        if watched is self.files.viewport() and event.type() == QEvent.Type.Resize:
            repo_files.fit_columns(self.files)
        return super().eventFilter(watched, event)

    def show_repository(self, repo_id: str, facts: str) -> None:
        self.title.setText(repo_id)
        self.facts.setText(facts)

    def clear(self) -> None:
        self.title.setText("")
        self.facts.setText(CHOOSE)
        self.files.clear()
        self.card.show_status("Choose a repository to read its model card.")
