"""A repository's model card on the Models page, shown through the chat's one markdown renderer.

The README is markdown written by whoever made the repository: the renderer escapes
every character of it and writes the only markup (an `<img>` or any HTML in the card
shows as the text it is; an image becomes a link to its address). The view loads no
resource at all (`loadResource` answers nothing), follows no link by itself, and opens
a clicked one through the link guard, which shows a hidden address first.

The front matter's facts (license, base model, task) lead as rows, their names in caption type.
Each code block has a label line (its language) with a Copy button laid over its right end, the
chat's own (`widgets/copy_button.py`): a copy icon that shows a check and "Copied" for a moment.
The buttons are children of the viewport, placed from the document's layout whenever it scrolls,
resizes or lays out again.
"""

from __future__ import annotations

from PySide6.QtCore import QSizeF, Qt, QUrl
from PySide6.QtGui import QFontMetricsF, QGuiApplication, QResizeEvent, QTextBlock, QTextBlockFormat, QTextCursor
from PySide6.QtWidgets import QTextBrowser, QToolButton, QWidget

from prefill.hub.model_card import MAX_CARD_BYTES, ModelCard
from prefill.ui.markdown.link_guard import open_link
from prefill.ui.markdown.rich_text import (
    CODE_ANCHOR,
    LIGHT_CODE,
    CodePalette,
    code_blocks,
    is_safe_url,
    render_facts,
    render_markdown,
)
from prefill.ui.widgets.copy_button import CopyConfirm, icon_button
from prefill.ui.widgets.tokens import SPACE

COPY_CODE_TIP = "Copy the code"
FACT_NAMES = {"pipeline tag": "task"}  # the front matter's field names, in the window's words


class CardView(QTextBrowser):
    """The card, read-only; `show_card`, `show_status` fill it.

    Attributes:
        resources_asked: every resource the document asked for (none is ever loaded; kept for tests).
        copy_buttons: each code block's Copy button, in the order of its blocks.
    """

    def __init__(self, palette: CodePalette | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("model-card")
        self.setAccessibleName("Model card")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.document().setUndoRedoEnabled(False)
        self.palette_ = palette or LIGHT_CODE
        self.resources_asked: list[str] = []
        self.copy_buttons: list[QToolButton] = []
        self._labels: list[QTextBlock] = []  # each code block's label line, where its button sits
        self._codes: list[str] = []
        self._shown: tuple[ModelCard | None, str] | None = None  # the card in view, for a new palette
        self.anchorClicked.connect(self._on_anchor_clicked)
        self.verticalScrollBar().valueChanged.connect(lambda _v: self._place_buttons())
        self.document().documentLayout().documentSizeChanged.connect(self._on_document_size_changed)
        self.show_status("Choose a repository to read its model card.")

    def loadResource(self, type_: int, name: QUrl | str) -> object:  # noqa: N802 - Qt's name
        """Nothing from a card is ever loaded (no image, no style sheet, from disk or network)."""
        self.resources_asked.append(name.toString() if isinstance(name, QUrl) else name)
        return None

    def show_card(self, card: ModelCard | None, repo_id: str) -> None:
        if card is None:
            self.show_status(f"{repo_id} has no model card (README.md).")
            return
        self._shown = (card, repo_id)
        text = card.text or "*The model card is empty.*"
        if card.truncated:
            text += f"\n\n*The card is longer than {MAX_CARD_BYTES >> 10} KiB; the rest is not shown.*"
        self._drop_buttons()
        facts = tuple((FACT_NAMES.get(name, name), value) for name, value in card.facts)
        self.setHtml(render_facts(facts, self.palette_) + render_markdown(text, self.palette_, copy_buttons=True))
        self._codes = code_blocks(text)
        self._add_buttons()

    def show_status(self, text: str) -> None:
        """A line instead of a card (loading, none, a failure): plain text."""
        self._shown = None
        self._drop_buttons()
        self.setPlainText(text)

    def set_code_palette(self, palette: CodePalette) -> None:
        """Draw the card in a theme's colours (the one in view again, at once)."""
        self.palette_ = palette
        if self._shown is not None:
            self.show_card(*self._shown)

    def copy_code(self, n: int) -> None:
        """Copy code block ``n`` exactly, and have its button say so."""
        if 0 <= n < len(self._codes):
            QGuiApplication.clipboard().setText(self._codes[n])
            confirm = self.copy_buttons[n].findChild(CopyConfirm)
            if confirm is not None:
                confirm.confirm()

    # --- the Copy buttons --------------------------------------------------------------------
    def _drop_buttons(self) -> None:
        for b in self.copy_buttons:
            b.hide()
            b.deleteLater()
        self.copy_buttons, self._labels, self._codes = [], [], []

    def _add_buttons(self) -> None:
        """A Copy button over each code block's label line, which is made as tall as the button."""
        block = self.document().begin()
        while block.isValid():
            n = _code_number(block)
            if n is not None and n == len(self.copy_buttons):  # a block past the fold has no label
                b = icon_button("copy", COPY_CODE_TIP, "Copy", "card-code-copy")
                b.setParent(self.viewport())
                b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
                b.setCursor(Qt.CursorShape.PointingHandCursor)
                CopyConfirm(b, COPY_CODE_TIP)
                b.clicked.connect(lambda _c=False, i=n: self.copy_code(i))
                # The label's line gets room above and below its words for the button, centred on them.
                room = max(0.0, (b.sizeHint().height() - _words_height(block)) / 2)
                fmt = QTextBlockFormat(block.blockFormat())
                fmt.setTopMargin(fmt.topMargin() + room)
                fmt.setBottomMargin(fmt.bottomMargin() + room)
                QTextCursor(block).setBlockFormat(fmt)
                self.copy_buttons.append(b)
                self._labels.append(block)
            block = block.next()
        self._place_buttons()

    def _place_buttons(self) -> None:
        layout = self.document().documentLayout()
        top = self.verticalScrollBar().value()
        right = self.viewport().width() - SPACE.xs
        for block, b in zip(self._labels, self.copy_buttons, strict=True):
            size = b.sizeHint()
            line = block.layout().lineAt(0)
            if line.isValid():  # where its words are drawn
                middle = block.layout().position().y() + line.y() + line.height() / 2
            else:
                middle = layout.blockBoundingRect(block).center().y()
            b.setGeometry(right - size.width(), round(middle - size.height() / 2) - top, size.width(), size.height())
            b.show()

    def _on_document_size_changed(self, _size: QSizeF) -> None:
        self._place_buttons()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._place_buttons()

    def _on_anchor_clicked(self, url: QUrl) -> None:
        if is_safe_url(url.toString()):
            open_link(self, self.document(), url)


def _words_height(block: QTextBlock) -> float:
    """The height of a label line's words (its first fragment's font)."""
    it = block.begin()
    font = it.fragment().charFormat().font() if not it.atEnd() else block.charFormat().font()
    return QFontMetricsF(font).height()


def _code_number(block: QTextBlock) -> int | None:
    """The code block whose label line this is (its ``code-N`` anchor), or None."""
    it = block.begin()
    while not it.atEnd():
        for name in it.fragment().charFormat().anchorNames():
            if name.startswith(CODE_ANCHOR) and name[len(CODE_ANCHOR):].isdigit():
                return int(name[len(CODE_ANCHOR):])
        it += 1
    return None
