"""First run without a model: offer the bundled SmolLM2 and say how to get others."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from prefill.ui.widgets.plain_text import plain_label, rich_label


class Welcome(QWidget):
    """Signals:
        use_model(str): load this model file.
        open_file(): pick a .gguf file.
    """

    use_model = Signal(str)
    open_file = Signal()

    def __init__(self, bundled: Path | None):
        super().__init__()
        lay = QVBoxLayout(self)
        lay.setAlignment(Qt.AlignmentFlag.AlignCenter)
        title = rich_label("<h2>Welcome to Prefill</h2>")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(title)
        text = plain_label(
            "Chat with a language model on this computer, and watch the engine work: "
            "prompt length, KV cache, time to first token and tokens per second, live."
        )
        text.setWordWrap(True)
        text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(text)
        self.bundled_button = QPushButton("Start with SmolLM2-135M (bundled, 98 MB)")
        self.bundled_button.setObjectName("use-bundled")
        if bundled is not None:
            self.bundled_button.clicked.connect(lambda: self.use_model.emit(str(bundled)))
            lay.addWidget(self.bundled_button, 0, Qt.AlignmentFlag.AlignCenter)
        open_button = QPushButton("Open a .gguf file…")
        open_button.clicked.connect(self.open_file)
        lay.addWidget(open_button, 0, Qt.AlignmentFlag.AlignCenter)
        more = rich_label(
            "Other models: search and download GGUF models from the Hugging Face hub in the "
            "<b>Models</b> tab above, or open any .gguf you have."
        )
        more.setWordWrap(True)
        more.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(more)
