"""Screenshots under Xvfb of an edited question's versions and of the window small with Serve open.

edit-versions.png: a chat whose first question was edited: it shows ‹ 2 / 2 › and the answer to the new
words. edit-versions-older.png: paged back to 1 / 2, the old words with the turns that followed them.
serve-900x600.png (and serve-900x600-dark.png): the window at 900×600 with the Server panel open, nothing
cut off.

The model is the bundled SmolLM2-135M, greedy, so the pictures are the same on every run. Needs Xvfb.

    python scripts/screenshot_edit_versions.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

QUESTIONS = ("Name a fruit.", "Name another one.")
EDITED = "Name a vegetable."


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    def greedy(s: object) -> object:
        return replace(s, sampling=replace(s.sampling, temperature=0.0, max_tokens=40))  # type: ignore

    model = bundled_model()
    shots = Shots(out, greedy, None)
    w, shoot, c = shots.window, shots.shoot, shots.window.controller
    steps = iter([
        lambda: c.send(QUESTIONS[0]),
        lambda: c.send(QUESTIONS[1]),
        lambda: w.message_actions._on_view_edit_saved(0, EDITED),  # the first question, edited and saved
    ])

    ended: list[bool] = []

    def step(_event: object = None) -> None:
        if ended:
            return
        action = next(steps, None)
        if action is not None:
            QTimer.singleShot(100, action)
            return
        ended.append(True)
        QTimer.singleShot(600, lambda: (shoot("edit-versions.png", window_only=True), older()))

    def older() -> None:
        c.conversation_opened.connect(paged)
        w.message_actions.run("older", 0)

    def paged(_cid: int) -> None:
        c.conversation_opened.disconnect(paged)
        QTimer.singleShot(600, lambda: (shoot("edit-versions-older.png", window_only=True), small()))

    def small() -> None:
        w.resize(900, 600)
        w.serve_action.setChecked(True)
        QTimer.singleShot(800, lambda: (shoot("serve-900x600.png", window_only=True), small_dark()))

    def small_dark() -> None:
        from prefill.ui.widgets.theme import apply_theme

        w.set_theme(apply_theme(shots.app, "dark"))
        QTimer.singleShot(1500, lambda: (shoot("serve-900x600-dark.png", window_only=True), shots.app.quit()))

    w.model_loaded.connect(lambda _m: step())
    c.answer_finished.connect(step)
    QTimer.singleShot(300, lambda: w.load_model(str(model)))
    shots.run(180_000)
    return 0 if len(shots.saved) == 4 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
