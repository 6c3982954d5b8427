"""Images in the window: attached by the button's path, a paste and a drop, refused in words, sent to
the tiny vision model, kept in the history by digest and shown again after a restart."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QColor, QDragEnterEvent, QDropEvent, QImage
from PySide6.QtWidgets import QApplication, QToolButton

from prefill.bench.tiny_vision import write_tiny_vision
from prefill.engine.events import PrefillDone
from prefill.engine.local.kv_disk import KvDiskCache
from prefill.ui.main_window import MainWindow
from prefill.ui.models.picker import loaded_name
from tests.ui.conftest import ANSWER_TIMEOUT, load, small_settings

ATTACH_TIMEOUT = 10_000


@pytest.fixture(scope="module")
def tiny_vision(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tiny vision pair, side by side as a download leaves them (the window finds the mmproj)."""
    return write_tiny_vision(tmp_path_factory.mktemp("tiny-vision"))


def _png(path: Path, color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> Path:
    Image.new("RGB", size, color).save(path)
    return path


def _settings():
    return small_settings(n_ctx=1024, max_tokens=6)


def _attached(qtbot, w: MainWindow, n: int) -> None:
    qtbot.waitUntil(lambda: len(w.input.images) == n and not w.images.busy, timeout=ATTACH_TIMEOUT)


def _drop(w: MainWindow, mime: QMimeData) -> None:
    """A drag entering the window, then its drop (Qt delivers a drop only to the drag's target)."""
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, mime, buttons, keys)
    QApplication.sendEvent(w, enter)
    assert enter.isAccepted()
    QApplication.sendEvent(w, QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime, buttons, keys))


def _send_typed(qtbot, w: MainWindow, text: str) -> tuple[PrefillDone, object]:
    seen: list[PrefillDone] = []
    w.engine.worker.prefill_done.connect(lambda _r, p: seen.append(p))
    w.input.editor.setPlainText(text)
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT) as blocker:
        qtbot.keyClick(w.input.editor, Qt.Key.Key_Return)
    assert seen
    return seen[-1], blocker.args[0]


def _thumbs_shown(w: MainWindow, row: int) -> bool:
    widget = w.chat_view.live_widget(row)
    strip = widget.images if widget is not None else None
    return strip is not None and bool(strip.tiles) and all(
        t.picture.pixmap() is not None and not t.picture.pixmap().isNull() for t in strip.tiles)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_attach_paste_drop_send_and_restart(app, qtbot, tmp_path: Path, tiny_vision) -> None:
    model, _mmproj = tiny_vision
    red, blue = _png(tmp_path / "red.png", (220, 20, 20)), _png(tmp_path / "blue.png", (20, 20, 220))
    w = app.open(_settings(), KvDiskCache(app.data / "kv", min_free=0))
    load(qtbot, w, model)
    assert w.loaded is not None and w.loaded.projector and w.input.attach.isEnabled()

    # A non-image is refused in words; the typed text stays as it was.
    w.input.editor.setPlainText("keep me")
    not_image = tmp_path / "notes.png"
    not_image.write_text("these are words, not pixels")
    w.images.attach_files([str(not_image)])
    qtbot.waitUntil(lambda: "not an image" in w.notice.text(), timeout=ATTACH_TIMEOUT)
    assert "notes.png" in w.notice.text() and w.input.editor.toPlainText() == "keep me"
    assert w.input.images == []

    # The button's path, a pasted bitmap, a dropped file URL; the same image twice is one.
    w.images.attach_files([str(red)])
    _attached(qtbot, w, 1)
    pasted = QMimeData()
    green = QImage(40, 30, QImage.Format.Format_RGB32)
    green.fill(QColor(20, 200, 20))
    pasted.setImageData(green)
    w.input.editor.insertFromMimeData(pasted)
    _attached(qtbot, w, 2)
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(blue))])
    _drop(w, dropped)
    _attached(qtbot, w, 3)
    w.images.attach_files([str(red)])
    qtbot.waitUntil(lambda: not w.images.busy, timeout=ATTACH_TIMEOUT)
    assert len(w.input.images) == 3 and w.input.editor.toPlainText() == "keep me"
    strip = w.input.strip
    assert strip is not None and strip.isVisible() and len(strip.tiles) == 3
    # The pasted one is removed by its ×.
    remove = strip.tiles[1].findChild(QToolButton, "image-remove")
    qtbot.mouseClick(remove, Qt.MouseButton.LeftButton)
    assert [p.width for p in w.input.images] == [64, 64]

    prefill, finished = _send_typed(qtbot, w, "What colours are these?")
    assert prefill.image_tokens > 0 and finished.metrics.image_tokens == prefill.image_tokens
    assert w.input.images == [] and not w.input.strip.isVisible()
    assert "encoded in" in w.sidebar.text("images")
    qtbot.waitUntil(lambda: _thumbs_shown(w, 0), timeout=ATTACH_TIMEOUT)
    digests = [p.digest for p in w.transcript.row(0).images]
    assert len(digests) == 2

    # Kept once per digest, private.
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    folder = app.data / "images"
    assert sorted(p.name for p in folder.iterdir()) == sorted(digests)
    assert _mode(folder) == 0o700 and {_mode(p) for p in folder.iterdir()} == {0o600}
    cid = w.controller.conversation_id
    resumed = len(w.engine.worker.engine.cached_tokens)
    app.close(w)  # quitting saves the chat's cache

    w2 = app.open(_settings(), KvDiskCache(app.data / "kv", min_free=0))
    load(qtbot, w2, model)
    with qtbot.waitSignal(w2.controller.conversation_opened, timeout=10_000):
        w2.controller.open_conversation(cid)
    assert [p.digest for p in w2.transcript.row(0).images] == digests
    assert [p.digest for p in w2.controller.messages()[0].images] == digests
    qtbot.waitUntil(lambda: _thumbs_shown(w2, 0), timeout=ATTACH_TIMEOUT)
    new_text = "And now?"
    prefill2, _ = _send_typed(qtbot, w2, new_text)
    # The images and turn 1 come from the saved cache: only what is new (turn 2's words, and the
    # template's tokens around them and the last answer's end) is evaluated; no image is encoded again.
    assert prefill2.restored_tokens == prefill2.cached_tokens == resumed > prefill.image_tokens
    assert prefill2.evaluated_tokens < 30 and prefill2.image_encode_ms == 0
    assert prefill2.image_tokens == prefill.image_tokens


def test_a_model_without_its_projector_says_which_file_images_need(app, qtbot, tmp_path: Path, tiny_vision) -> None:
    model, _ = tiny_vision
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "model.gguf").symlink_to(model)
    w = app.open(_settings())
    load(qtbot, w, alone / "model.gguf")
    assert not w.input.attach.isEnabled()
    assert "mmproj" in w.input.attach.toolTip()
    w.input.editor.setPlainText("typed")
    w.images.attach_files([str(_png(tmp_path / "x.png", (1, 2, 3)))])
    assert "projector" in w.notice.text() and "mmproj" in w.notice.text()
    assert w.input.images == [] and w.input.editor.toPlainText() == "typed"
    # the model as the window names it (model.gguf is generic: the file's general.name, read for a person),
    # and no command-line flag
    assert w.notice.text().startswith(f"{loaded_name(w.loaded)} cannot see images")
    assert "--mmproj" not in w.notice.text() and "Models page" in w.notice.text()
