"""A repository's model card on the Models page, shown through the chat's one markdown renderer.

The README is markdown written by whoever made the repository: the renderer escapes
every character of it and writes the only markup (an `<img>` or any HTML in the card
shows as the text it is; an image becomes a link to its address). The view loads no
resource at all (`loadResource` answers nothing), follows no link by itself, and opens
a clicked one through the link guard, which shows a hidden address first.
"""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QTextBrowser, QWidget

from prefill.hub.model_card import MAX_CARD_BYTES, ModelCard
from prefill.ui.markdown.link_guard import open_link
from prefill.ui.markdown.rich_text import LIGHT_CODE, CodePalette, code_blocks, is_safe_url, render_markdown


class CardView(QTextBrowser):
    """The card, read-only; `show_card`, `show_status` fill it.

    Attributes:
        resources_asked: every resource the document asked for (none is ever loaded; kept for tests).
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
        self._text = ""  # the card's markdown, for its code blocks' Copy links
        self.anchorClicked.connect(self._on_anchor_clicked)
        self.show_status("Choose a repository to read its model card.")

    def loadResource(self, type_: int, name: QUrl | str) -> object:  # noqa: N802 - Qt's name
        """Nothing from a card is ever loaded (no image, no style sheet, from disk or network)."""
        self.resources_asked.append(name.toString() if isinstance(name, QUrl) else name)
        return None

    def show_card(self, card: ModelCard | None, repo_id: str) -> None:
        if card is None:
            self.show_status(f"{repo_id} has no model card (README.md).")
            return
        facts = "".join(f"- **{k}:** {_escape(v)}\n" for k, v in card.facts)
        text = (facts + "\n" if facts else "") + (card.text or "*The model card is empty.*")
        if card.truncated:
            text += f"\n\n*The card is longer than {MAX_CARD_BYTES >> 10} KiB; the rest is not shown.*"
        self._text = text
        self.setHtml(render_markdown(text, self.palette_))

    def show_status(self, text: str) -> None:
        """A line instead of a card (loading, none, a failure): plain text."""
        self.setPlainText(text)

    def _on_anchor_clicked(self, url: QUrl) -> None:
        if url.scheme() == "copy":  # a code block's Copy: its code, as the chat's do
            codes = code_blocks(self._text)
            n = url.path()
            if n.isdigit() and int(n) < len(codes):
                QGuiApplication.clipboard().setText(codes[int(n)])
        elif is_safe_url(url.toString()):
            open_link(self, self.document(), url)


def _escape(value: str) -> str:
    """A front-matter value as markdown text: its markup characters shown as written."""
    return "".join("\\" + c if c in "\\`*_[]<>#|!" else c for c in value)

