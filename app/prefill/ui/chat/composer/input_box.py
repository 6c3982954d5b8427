"""The composer: a rounded card in the chat's column with the message field, the attach buttons and
Send (Stop while an answer streams) inside it, and the context meter under it.

Enter sends, Shift+Enter is a new line, Esc stops the answer, Tab moves on (Ctrl+Tab types a tab
character). The field grows with its text up to `MAX_LINES`, then scrolls. Images and documents pasted
or dropped on the field are offered, never inserted as text.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QMimeData, QObject, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.message import ImagePart
from prefill.ui.chat.composer.context_meter import ContextMeter, repolish
from prefill.ui.chat.composer.document_sources import offered
from prefill.ui.chat.images.image_strip import ImageStrip, ImageThumbs
from prefill.ui.chat.transcript.submit_edit import SubmitEdit
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import tooltip
from prefill.ui.widgets.tokens import COLUMN, ICON, SPACE, column_width

PAD = SPACE.md  # at each side of the composer, as around the messages (transcript/view.py)
MIN_LINES = 1  # the field's height, in lines of text, when empty
MAX_LINES = 10  # past this many lines the field scrolls instead of growing
IMAGES_TIP = "Attach images (or paste them, or drop them on the window)"
SEND_TIP = "Send (Enter)"
STOP_TIP = "Stop the answer (Esc)"


class _Editor(SubmitEdit):
    images_offered = Signal(object)  # a list of image sources pasted or dropped (`image_sources`)
    documents_offered = Signal(object)  # a list of files and folders pasted or dropped (`document_sources`)

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() == Qt.Key.Key_Tab and e.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.insertPlainText("\t")  # a tab character for code or tables, since Tab itself moves on
            return
        super().keyPressEvent(e)

    # --- images and documents pasted (Ctrl+V) or dropped on the box: offered, never inserted as text ----
    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        images, documents = offered(source)
        return bool(images or documents) or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        images, documents = offered(source)
        if documents:
            self.documents_offered.emit(documents)
        if images:
            self.images_offered.emit(images)
        if images or documents:
            return
        super().insertFromMimeData(source)

    def lines_tall(self, lines: int) -> int:
        """The field's height, in pixels, for `lines` lines of its font."""
        frame = self.frameWidth() * 2 + self.contentsMargins().top() + self.contentsMargins().bottom()
        margin = int(self.document().documentMargin() * 2)
        return lines * self.fontMetrics().lineSpacing() + frame + margin

    def shown_lines(self) -> int:
        """The lines its text takes, wrapped at its width (a plain text layout counts lines, not pixels)."""
        if self.document().isEmpty() and self.placeholderText():  # the hint, wrapped, shown whole
            width = max(1, self.viewport().width() - int(self.document().documentMargin() * 2))
            flags = int(Qt.TextFlag.TextWordWrap)
            tall = self.fontMetrics().boundingRect(0, 0, width, 10_000, flags, self.placeholderText()).height()
            return max(1, -(-tall // self.fontMetrics().lineSpacing()))
        return max(1, int(self.document().documentLayout().documentSize().height()))


def _icon_button(name: str, icon_name: str, text: str, tip: str) -> QToolButton:
    """A button of the card: its icon only, its words as its accessible name and tooltip."""
    b = QToolButton()
    b.setObjectName(name)
    b.setText(text)
    b.setIcon(icon(icon_name))
    b.setIconSize(QSize(ICON.inline, ICON.inline))
    b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
    b.setAccessibleName(text.rstrip("…"))
    b.setToolTip(tooltip(tip))
    b.setCursor(Qt.CursorShape.PointingHandCursor)
    return b


class InputBox(QWidget):
    """The composer.

    Signals:
        send(str): the text to send (the box is cleared; its images are `take_images`).
        stop(): Esc or the Stop button while an answer streams.
        text_changed(str): for the context meter.
        images_offered(object): images pasted or dropped on the box (a list of `image_sources`).
        attach_clicked(): the image button, to choose image files.
        documents_offered(object): files and folders pasted or dropped on the box or the window, to read
            in this chat (a list of paths).
    """

    send = Signal(str)
    stop = Signal()
    text_changed = Signal(str)
    images_offered = Signal(object)
    attach_clicked = Signal()
    documents_offered = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("composer")
        self.generating = False
        self.images: list[ImagePart] = []  # attached, sent with the next message
        self.strip: ImageStrip | None = None  # their thumbnails (`use_thumbs`)

        self.card = QFrame()
        self.card.setObjectName("composer-card")
        self.card.setProperty("focused", False)
        self.editor = _Editor()
        self.editor.setObjectName("message-input")
        self.editor.setAccessibleName("Message")
        self.editor.setPlaceholderText("Message the model — Enter sends, Shift+Enter for a new line, Esc stops")
        self.editor.setFrameShape(QFrame.Shape.NoFrame)
        self.editor.installEventFilter(self)
        self.attach = _icon_button("attach-button", "image", "Attach image…", IMAGES_TIP)
        self.attach.setAccessibleName("Attach an image")
        self.button = _icon_button("send-button", "send", "Send", SEND_TIP)
        self.button.setIconSize(QSize(ICON.toolbar, ICON.toolbar))
        self.button.setProperty("streaming", False)
        self.meter = ContextMeter()
        self.count = self.meter.words  # the meter's words (what tests and the window read)

        self.row = QHBoxLayout()
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.setSpacing(SPACE.xs)
        self.row.addWidget(self.attach)
        self.row.addStretch(1)
        self.row.addWidget(self.button)
        self._card_lay = QVBoxLayout(self.card)
        self._card_lay.setContentsMargins(SPACE.md, SPACE.sm, SPACE.sm, SPACE.sm)
        self._card_lay.setSpacing(SPACE.xs)
        self._card_lay.addWidget(self.editor)
        self._card_lay.addLayout(self.row)

        # The chat's column: the card and the meter as wide as the messages, centred, within COLUMN's limits.
        self.column = QWidget()
        self.column.setObjectName("composer-column")
        self.column.setMaximumWidth(COLUMN.max_width)  # then as wide as the messages' (resizeEvent)
        self.column.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        col = QVBoxLayout(self.column)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(self.card)
        col.addWidget(self.meter)
        outer = QHBoxLayout(self)
        outer.setContentsMargins(PAD, SPACE.xs, PAD, SPACE.sm)
        outer.addStretch(0)  # what the column leaves past its width, on either side
        outer.addWidget(self.column, 1)
        outer.addStretch(0)

        self.attach.clicked.connect(self.attach_clicked)
        self.editor.images_offered.connect(self.images_offered)
        self.editor.documents_offered.connect(self.documents_offered)
        self.editor.submit.connect(self._on_editor_submit)
        self.editor.escape.connect(self.stop)
        self.button.clicked.connect(self._on_button_clicked)
        self.editor.textChanged.connect(self._on_editor_text_changed)
        self.editor.document().documentLayout().documentSizeChanged.connect(lambda _s: self._fit_height())
        self._fit_height()

    # --- sending and stopping -------------------------------------------------------------------
    def set_generating(self, generating: bool) -> None:
        """Send becomes Stop while an answer streams, and back."""
        self.generating = generating
        text, name, tip = ("Stop", "stop", STOP_TIP) if generating else ("Send", "send", SEND_TIP)
        self.button.setText(text)
        self.button.setIcon(icon(name))
        self.button.setAccessibleName(text)
        self.button.setToolTip(tooltip(tip))
        self.button.setProperty("streaming", generating)
        repolish(self.button)

    def _on_editor_submit(self) -> None:
        if self.generating:
            return
        text = self.editor.toPlainText().strip()
        if text or self.images:
            self.editor.clear()
            self.send.emit(text)

    def _on_button_clicked(self) -> None:
        if self.generating:
            self.stop.emit()
        else:
            self._on_editor_submit()

    def _on_editor_text_changed(self) -> None:
        self._fit_height()
        self.text_changed.emit(self.editor.toPlainText())

    # --- the field's height and the card's focus ------------------------------------------------
    def _fit_height(self) -> None:
        """As tall as its text, from MIN_LINES to MAX_LINES lines."""
        wanted = self.editor.shown_lines()
        lines = min(MAX_LINES, max(MIN_LINES, wanted))
        height = self.editor.lines_tall(lines)
        self.editor.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded if wanted > MAX_LINES
                                               else Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        if self.editor.height() != height or self.editor.minimumHeight() != height:
            self.editor.setFixedHeight(height)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.editor:
            kind = event.type()
            if kind in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
                self.card.setProperty("focused", kind == QEvent.Type.FocusIn)
                repolish(self.card)
            elif kind in (QEvent.Type.FontChange, QEvent.Type.StyleChange, QEvent.Type.Show):
                self._fit_height()
        return False

    def resizeEvent(self, e: QResizeEvent) -> None:
        super().resizeEvent(e)
        self.column.setMaximumWidth(column_width(max(1, e.size().width() - 2 * PAD)))  # as wide as the messages
        self._fit_height()  # the text wraps at a new width

    # --- what goes with the message: images, documents ------------------------------------------
    def use_thumbs(self, thumbs: ImageThumbs) -> None:
        """Show attached images with these thumbnails (a row above the text, each with its ×)."""
        self.strip = ImageStrip(thumbs, removable=True)
        self.strip.removed.connect(self.remove_image)
        self._card_lay.insertWidget(0, self.strip)

    def add_strip(self, strip: QWidget) -> None:
        """A row above the text inside the card (the chat's documents), under the images' thumbnails."""
        self._card_lay.insertWidget(self._card_lay.indexOf(self.editor), strip)

    def add_button(self, button: QToolButton) -> None:
        """A button beside the image button (the documents'): shown by its icon alone, as the others; its
        words stay its accessible name and tooltip."""
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        button.setIcon(icon("attach"))
        button.setIconSize(QSize(ICON.inline, ICON.inline))
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.row.insertWidget(self.row.indexOf(self.attach) + 1, button)

    def add_image(self, part: ImagePart) -> None:
        self.images.append(part)
        self._show_images()

    def remove_image(self, index: int) -> None:
        if 0 <= index < len(self.images):
            del self.images[index]
            self._show_images()

    def take_images(self) -> tuple[ImagePart, ...]:
        """The attached images, for the message being sent; the box has none after."""
        taken, self.images = tuple(self.images), []
        self._show_images()
        return taken

    def set_images_allowed(self, allowed: bool, why: str) -> None:
        """The image button is off, saying `why`, for a model that cannot see images."""
        self.attach.setEnabled(allowed)
        self.attach.setToolTip(tooltip(IMAGES_TIP if allowed else why))

    def _show_images(self) -> None:
        if self.strip is not None:
            self.strip.set_images(self.images)
