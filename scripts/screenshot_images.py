"""Screenshots of images in the chat under Xvfb: a picture attached in the input box with a question
typed (image-attached.png), and the answered turn with the picture's thumbnail on the question and
the image tokens in the sidebar (image-answered.png).

The model is the tiny vision pair (`python -m prefill.bench.tiny_vision`, random weights: its
answer is noise; the picture shows the path). The picture is drawn here. Needs Xvfb.

    python scripts/screenshot_images.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, main_for  # noqa: E402

QUESTION = "What is in this picture?"


def main() -> int:
    return main_for(__file__, prepare)


def prepare(home: Path) -> list[str]:
    """The tiny vision pair side by side (the window finds the mmproj) and a picture to attach."""
    from prefill.bench.tiny_vision import write_tiny_vision

    model, _mmproj = write_tiny_vision(home / "models")
    picture = home / "harbour.png"
    draw_picture(picture)
    return [str(model), str(picture)]


def draw_picture(path: Path) -> None:
    """A small harbour at sunset: sky, sun, sea, a boat (enough that a thumbnail reads as a picture)."""
    from PIL import Image, ImageDraw

    w, h = 480, 320
    img = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(img)
    for y in range(h * 3 // 5):  # the sky, orange to violet
        t = y / (h * 3 / 5)
        d.line([(0, y), (w, y)], fill=(int(250 - 120 * t), int(170 - 110 * t), int(90 + 90 * t)))
    d.ellipse([300, 110, 370, 180], fill=(255, 224, 130))
    for y in range(h * 3 // 5, h):  # the sea
        t = (y - h * 3 / 5) / (h * 2 / 5)
        d.line([(0, y), (w, y)], fill=(int(40 + 20 * t), int(70 + 30 * t), int(120 + 40 * t)))
    d.polygon([(110, 230), (230, 230), (210, 255), (130, 255)], fill=(90, 50, 30))
    d.line([(170, 230), (170, 150)], fill=(60, 40, 20), width=4)
    d.polygon([(172, 155), (172, 225), (220, 225)], fill=(245, 245, 235))
    img.save(path)


def inside(out: Path, model: str, picture: str) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    def adjust(s: object) -> object:
        return replace(s, sampling=replace(s.sampling, temperature=0.0, max_tokens=24))  # type: ignore

    shots = Shots(out, adjust, None)
    w, shoot = shots.window, shots.shoot

    def loaded(_m: object) -> None:
        w.images.attach_files([picture])
        w.input.editor.setPlainText(QUESTION)
        wait_attached()

    def wait_attached() -> None:
        if w.images.busy or not w.input.images:
            QTimer.singleShot(100, wait_attached)
            return
        QTimer.singleShot(500, lambda: (shoot("image-attached.png"), w.input._on_editor_submit()))

    def finished(_f: object) -> None:
        QTimer.singleShot(800, lambda: (shoot("image-answered.png"), shots.app.quit()))

    w.model_loaded.connect(loaded)
    w.controller.answer_finished.connect(finished)
    QTimer.singleShot(300, lambda: w.load_model(model))
    shots.run(120_000)
    return 0 if len(shots.saved) == 2 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
    raise SystemExit(main())
