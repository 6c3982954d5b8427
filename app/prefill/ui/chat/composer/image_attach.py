"""Attaching images to the next message: the button, a paste, a drop on the box or the window.

`ImageAttacher` takes what is offered, runs each image through the door on the pool
(`image_jobs`), and puts what passes in the input box with its thumbnail; a refusal is a notice
in words, and the typed text is never touched. A model loaded without its projector cannot see
images: the button is off with a tooltip saying why, and an image offered anyway is refused with
that sentence (`no_projector_words`: the model as the window names it, and no command-line flag).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QImage
from PySide6.QtWidgets import QFileDialog, QWidget

from prefill.engine.vision.errors import ImageRejected
from prefill.session.loaded import LoadedModel
from prefill.ui.chat.composer.document_sources import offered
from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.chat.images.image_jobs import Admitted, admit_file, admit_qimage
from prefill.ui.chat.images.image_sources import ImageSource
from prefill.ui.chat.images.image_strip import ImageThumbs
from prefill.ui.chat.transcript.view import ChatView
from prefill.ui.workers.pool_jobs import PoolJobs

MAX_ATTACHED = 16  # images on one message
FILE_FILTER = "Images (*.png *.jpg *.jpeg *.webp *.gif *.bmp);;All files (*)"


class ImageAttacher(QObject):
    """Signals:
        refused(str): an image was not attached, and why, in words (for the window's notice).
    """

    refused = Signal(str)

    def __init__(self, box: InputBox, jobs: PoolJobs, thumbs: ImageThumbs, window: QWidget):
        super().__init__(window)
        self.box, self.jobs, self.thumbs, self.window = box, jobs, thumbs, window
        self.why_not = no_projector_words()  # "": the model answering can see images
        self._pending = 0  # images on the pool, not in the box yet
        box.use_thumbs(thumbs)
        box.images_offered.connect(self.offer)
        box.attach_clicked.connect(self.choose_files)
        window.setAcceptDrops(True)
        window.installEventFilter(self)
        self._set_allowed()

    def set_model(self, loaded: LoadedModel | None, name: str = "") -> None:
        """What answers now: a local model sees images only with its projector; a remote decides itself.
        `name`: the model as the window names it."""
        if loaded is None:
            self.why_not = no_projector_words()
        elif loaded.remote or loaded.projector:
            self.why_not = ""
        else:
            self.why_not = no_projector_words(name)
        self._set_allowed()

    def _set_allowed(self) -> None:
        self.box.set_images_allowed(not self.why_not, self.why_not)

    # --- offered ------------------------------------------------------------------------------
    def choose_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self.window, "Attach images", str(Path.home()), FILE_FILTER)
        self.attach_files(paths)

    def attach_files(self, paths: Sequence[str]) -> None:
        """The button's path once files are chosen (and a drop's, a paste's of file URLs)."""
        self.offer(list(paths))

    def offer(self, sources: list[ImageSource]) -> None:
        if not sources:
            return
        if self.why_not:
            self.refused.emit(f"{self.why_not}. Your message is kept.")
            return
        room = MAX_ATTACHED - len(self.box.images) - self._pending
        if len(sources) > room:
            self.refused.emit(f"A message takes at most {MAX_ATTACHED} images; {len(sources) - max(0, room)} "
                              "were not attached.")
            sources = sources[: max(0, room)]
        for source in sources:
            self._pending += 1
            if isinstance(source, QImage):
                self.jobs.run(admit_qimage, source, then=self._on_admitted, error=self._on_rejected)
            else:
                self.jobs.run(admit_file, source, then=self._on_admitted, error=self._on_rejected)

    @property
    def busy(self) -> bool:
        """Images are still being read (a test or the screenshot waits for `box.images`)."""
        return self._pending > 0

    def _on_admitted(self, admitted: Admitted) -> None:
        self._pending -= 1
        self.thumbs.add(admitted.part.digest, admitted.thumb)
        if all(p.digest != admitted.part.digest for p in self.box.images):  # the same image twice: once
            self.box.add_image(admitted.part)

    def _on_rejected(self, error: Exception) -> None:
        self._pending -= 1
        if not isinstance(error, ImageRejected):
            raise error  # a fault of Prefill's own: never swallowed
        self.refused.emit(f"The image was not attached: {error}. Your message is kept.")

    # --- a drop anywhere on the window: its images here, its documents to the box's documents_offered ------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and isinstance(event, QDragEnterEvent | QDropEvent):
            images, documents = offered(event.mimeData())
            if not images and not documents:
                return False
            event.acceptProposedAction()
            if isinstance(event, QDropEvent) and event.type() == QEvent.Type.Drop:
                if documents:
                    self.box.documents_offered.emit(documents)
                if images:
                    self.offer(images)
            return True
        return False


def no_projector_words(name: str = "") -> str:
    """Why images cannot be attached: the window's words for `ImagesNeedProjector` (no raw general.name,
    no command-line flag)."""
    who = name or "This model"
    return (f"{who} cannot see images: it was loaded without its projector (an mmproj-….gguf file from its "
            "repository). Download the model again on the Models page, which brings its projector, then load it.")


def attach_images(box: InputBox, view: ChatView, window: QWidget, notice: Callable[[str], None]) -> ImageAttacher:
    """The window's images, wired: its own pool (two threads: a big photo must not wait behind
    another), the thumbnails the input box and the transcript share, refusals to `notice`."""
    jobs = PoolJobs(2, window)
    thumbs = ImageThumbs(jobs, window)
    view.thumbs = thumbs
    attacher = ImageAttacher(box, jobs, thumbs, window)
    attacher.refused.connect(notice)
    return attacher
