"""Screenshots of an answer's versions under Xvfb: a chat whose answer was regenerated twice, shown at
version 2 / 3 (alternatives.png: the later question follows version 3, so it is not shown), then back at
3 / 3 with the last answer deleted (its Undo showing) and the second question edited in place
(alternatives-edit.png).

The model is the bundled SmolLM2-135M, sampled with a seed per answer, so the three versions differ
and the pictures are the same on every run. Needs Xvfb.

    python scripts/screenshot_alternatives.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

QUESTIONS = ("Give me a name for a small grey cat.", "And one for a dog?")
SEEDS = (3, 11, 29)  # of the three versions of the first answer


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer


    def sampling(s: object, seed: int) -> object:
        return replace(s, sampling=replace(s.sampling, temperature=0.9, seed=seed, max_tokens=60))  # type: ignore

    model = bundled_model()
    shots = Shots(out, lambda s: sampling(s, SEEDS[0]), None)
    w, shoot, c = shots.window, shots.shoot, shots.window.controller
    steps = iter([
        lambda: c.send(QUESTIONS[0]),
        lambda: regenerate(SEEDS[1]),
        lambda: regenerate(SEEDS[2]),
        lambda: c.send(QUESTIONS[1]),
    ])

    def regenerate(seed: int) -> None:
        w.settings = sampling(w.settings, seed)  # type: ignore[assignment]
        w.message_actions.run("regenerate", 1)

    def step(_event: object = None) -> None:
        action = next(steps, None)
        if action is not None:
            QTimer.singleShot(100, action)
            return
        w.message_actions.run("older", 1)  # 3 / 3 → 2 / 3
        QTimer.singleShot(600, lambda: (shoot("alternatives.png"), edit()))

    def edit() -> None:
        w.message_actions.run("newer", 1)  # back to 3 / 3, which the second question followed
        QTimer.singleShot(600, delete_and_edit)

    def delete_and_edit() -> None:
        w.message_actions.run("delete", 3)  # the Undo bar shows for a few seconds
        w.message_actions.run("edit", 2)
        QTimer.singleShot(300, type_in)  # the row's editor opens once the view has laid the row out again

    def type_in() -> None:
        row = w.chat_view.live_widget(2)
        if row is not None and row.editor is not None:
            row.editor.text.setPlainText("And one for a very large, very fluffy white dog that loves the snow?")
        QTimer.singleShot(600, lambda: (shoot("alternatives-edit.png"), shots.app.quit()))

    w.model_loaded.connect(step)
    w.controller.answer_finished.connect(step)
    QTimer.singleShot(300, lambda: w.load_model(str(model)))
    shots.run(180_000)
    return 0 if len(shots.saved) == 2 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
