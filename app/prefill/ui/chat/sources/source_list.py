"""The sources listed under an answer: one button per source it cites ("[1] report.pdf, page 3").

Each opens the same passage view as the answer's mark [1] (`opened`), by a click or by the keyboard
(Tab reaches it, Enter or Space opens it). A file's name comes from outside: a button's text is never
rich text, but "&" would underline the next letter as a shortcut, so it is doubled; a name too long
for the pane is cut, the tooltip (plain text) gives it whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QSizePolicy, QToolButton, QVBoxLayout, QWidget

from prefill.ui.chat.sources.cited import CitedSource
from prefill.ui.widgets.code_palette import LIGHT_CODE, CodePalette
from prefill.ui.widgets.plain_text import plain_label, tooltip

SHOWN_NAME_CHARS = 80  # of a file's name on its button


def source_words(s: CitedSource) -> str:
    """How a listed source reads: "[1] report.pdf, page 3" (a long name cut with "…")."""
    name = s.name if len(s.name) <= SHOWN_NAME_CHARS else s.name[: SHOWN_NAME_CHARS - 1] + "…"
    return f"[{s.n}] {name}" + (f", page {s.page}" if s.page is not None else "")


class SourceList(QWidget):
    """An answer's sources, each a button that opens its passage.

    Signals:
        opened(int): the source with this number was asked for.
    """

    opened = Signal(int)

    def __init__(self, palette: CodePalette | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("message-sources")
        self._palette = palette or LIGHT_CODE
        self.heading = plain_label("Sources")
        self.heading.setObjectName("message-sources-title")
        self.buttons: list[QToolButton] = []
        self._lay = QVBoxLayout(self)
        self._lay.setContentsMargins(0, 4, 0, 0)
        self._lay.setSpacing(0)
        self._lay.addWidget(self.heading)

    def set_sources(self, sources: Sequence[CitedSource]) -> None:
        for b in self.buttons:
            b.hide()
            b.deleteLater()
        self.buttons = [self._button(s) for s in sources]
        for b in self.buttons:
            self._lay.addWidget(b, 0, Qt.AlignmentFlag.AlignLeft)
        self.setVisible(bool(self.buttons))

    def texts(self) -> list[str]:
        """What each button says, as a person reads it."""
        return [b.text().replace("&&", "&") for b in self.buttons]

    def _button(self, s: CitedSource) -> QToolButton:
        b = QToolButton(self)
        b.setObjectName("message-source")
        b.setAutoRaise(True)
        b.setText(source_words(s).replace("&", "&&"))  # "&" would make a shortcut of the next letter
        b.setToolTip(tooltip(f"Open the passage: {s.file or s.place}"))
        b.setAccessibleName(f"Source {s.n}: {s.place}. Opens its passage")
        b.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        pal = b.palette()
        pal.setColor(QPalette.ColorRole.ButtonText, QColor(self._palette.link))  # a link, in the theme's colour
        b.setPalette(pal)
        b.clicked.connect(lambda _=False, n=s.n: self.opened.emit(n))
        return b
