"""The message box: Enter sends, Shift+Enter is a new line, Esc stops the answer, Tab moves on
(Ctrl+Tab types a tab character)."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QToolButton, QVBoxLayout, QWidget

from prefill.engine.message import ImagePart
from prefill.ui.chat.composer.document_sources import offered
from prefill.ui.chat.images.image_strip import ImageStrip, ImageThumbs
from prefill.ui.chat.transcript.submit_edit import SubmitEdit
from prefill.ui.widgets.plain_text import plain_label, tooltip


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


class InputBox(QWidget):
    """Signals:
        send(str): the text to send (the box is cleared; its images are `take_images`).
        stop(): Esc or the Stop button while an answer streams.
        text_changed(str): for the live token count.
        images_offered(object): images pasted or dropped on the box (a list of `image_sources`).
        attach_clicked(): the attach button, to choose image files.
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
        self.editor = _Editor()
        self.editor.setObjectName("message-input")
        self.editor.setAccessibleName("Message")
        self.editor.setPlaceholderText("Message the model — Enter sends, Shift+Enter for a new line, Esc stops")
        self.editor.setFixedHeight(84)
        self.count = plain_label()
        self.count.setObjectName("token-count")
        self.button = QPushButton("Send")
        self.button.setObjectName("send-button")
        self.button.setAccessibleName("Send")
        self.generating = False
        self.images: list[ImagePart] = []  # attached, sent with the next message
        self.strip: ImageStrip | None = None  # their thumbnails (`use_thumbs`)
        self.attach = QToolButton()
        self.attach.setObjectName("attach-button")
        self.attach.setText("Attach image…")
        self.attach.setAccessibleName("Attach an image")
        self.attach.setToolTip("Attach images (or paste them, or drop them on the window)")
        self.attach.clicked.connect(self.attach_clicked)
        self.editor.images_offered.connect(self.images_offered)
        self.editor.documents_offered.connect(self.documents_offered)
        self.row = QHBoxLayout()
        row = self.row
        row.addWidget(self.attach)
        row.addWidget(self.count, 1)
        row.addWidget(self.button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 4, 12, 8)
        lay.addWidget(self.editor)
        lay.addLayout(row)
        self.editor.submit.connect(self._on_editor_submit)
        self.editor.escape.connect(self.stop)
        self.button.clicked.connect(self._on_button_clicked)
        self.editor.textChanged.connect(lambda: self.text_changed.emit(self.editor.toPlainText()))

    def set_generating(self, generating: bool) -> None:
        self.generating = generating
        self.button.setText("Stop" if generating else "Send")
        self.button.setAccessibleName(self.button.text())

    def set_count(self, tokens: int, n_ctx: int) -> None:
        self.count.setText(f"next prompt: {tokens:,} of {n_ctx:,} tokens")

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

    # --- attached images ----------------------------------------------------------------------
    def use_thumbs(self, thumbs: ImageThumbs) -> None:
        """Show attached images with these thumbnails (a row above the text, each with its ×)."""
        self.strip = ImageStrip(thumbs, removable=True)
        self.strip.removed.connect(self.remove_image)
        lay = self.layout()
        assert isinstance(lay, QVBoxLayout)
        lay.insertWidget(0, self.strip)

    def add_strip(self, strip: QWidget) -> None:
        """A row above the text (the chat's documents), under the images' thumbnails."""
        lay = self.layout()
        assert isinstance(lay, QVBoxLayout)
        lay.insertWidget(lay.indexOf(self.editor), strip)

    def add_button(self, button: QWidget) -> None:
        """A button beside the image attach button (the documents')."""
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
        """The attach button is off, saying `why`, for a model that cannot see images."""
        self.attach.setEnabled(allowed)
        self.attach.setToolTip(tooltip("Attach images (or paste them, or drop them on the window)" if allowed else why))

    def _show_images(self) -> None:
        if self.strip is not None:
            self.strip.set_images(self.images)
