"""First run without a model: offer the bundled SmolLM2 and say how to get others."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.text_sheet import primary
from prefill.ui.widgets.tokens import COLUMN, SPACE


class Welcome(QWidget):
    """Signals:
        use_model(str): load this model file.
        open_file(): pick a .gguf file.
    """

    use_model = Signal(str)
    open_file = Signal()

    def __init__(self, bundled: Path | None):
        super().__init__()
        column = QWidget()  # the words in a column of the chat's width, in the middle of the page
        column.setMaximumWidth(COLUMN.width)
        lay = QVBoxLayout(column)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(SPACE.sm)
        title = plain_label("Welcome to Prefill")
        title.setObjectName("welcome-title")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(title)
        text = plain_label(
            "Chat with a language model on this computer, and watch the engine work, live: how long "
            "the prompt is, the memory cells it fills, the wait for the first word and the writing speed."
        )
        text.setObjectName("welcome-text")
        text.setWordWrap(True)
        text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(text)
        self.bundled_button = primary(QPushButton("Start with SmolLM2-135M (bundled, 98 MB)"))
        self.bundled_button.setObjectName("use-bundled")
        open_button = QPushButton("Open a .gguf file…")
        open_button.setObjectName("open-model-file")
        open_button.setIcon(icon("folder"))
        open_button.clicked.connect(self.open_file)
        if bundled is not None:  # one above the other: the column keeps to the chat's least width
            self.bundled_button.clicked.connect(lambda: self.use_model.emit(str(bundled)))
            lay.addWidget(self.bundled_button, 0, Qt.AlignmentFlag.AlignHCenter)
        lay.addWidget(open_button, 0, Qt.AlignmentFlag.AlignHCenter)
        more = plain_label(
            "Other models: search and download GGUF models from the Hugging Face hub in the Models tab "
            "above, or open any .gguf file you have."
        )
        more.setObjectName("welcome-more")
        more.setWordWrap(True)
        more.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(more)
        # Centred by stretches either side, not by alignment: an aligned widget gets its size hint, whose
        # height is not what its wrapped words need at the width it gets (they were cut to two lines).
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(column, 100)
        row.addStretch(1)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(SPACE.lg, 0, SPACE.lg, 0)  # the stretches above and below give it air
        outer.addStretch(1)
        outer.addLayout(row)
        outer.addStretch(2)
