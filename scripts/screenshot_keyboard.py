"""Screenshots of the keyboard's side of the window under Xvfb, in the dark theme: an answer's
Regenerate button reached with Tab, its focus ring showing (focus-dark.png), and the shortcuts
sheet opened with Ctrl+/ (shortcuts.png).

The model is the bundled SmolLM2-135M, greedy, so the picture is the same on every run. Needs Xvfb.

    python scripts/screenshot_keyboard.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

QUESTION = "Name three colours of the sea."


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from dataclasses import replace

    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication


    def greedy(s: object) -> object:
        return replace(s, sampling=replace(s.sampling, temperature=0.0, max_tokens=40))  # type: ignore

    model = bundled_model()
    shots = Shots(out, greedy, None, theme="dark")
    w, shoot = shots.window, shots.shoot

    def press(key: Qt.Key, modifier: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
        focus = QApplication.focusWidget() or w
        QTest.keyClick(focus, key, modifier)

    def loaded(_m: object) -> None:
        w.activateWindow()
        QTest.keyClicks(w.input.editor, QUESTION)
        QTimer.singleShot(100, lambda: press(Qt.Key.Key_Return))

    def answered(_f: object) -> None:
        QTimer.singleShot(300, to_regenerate)

    def to_regenerate() -> None:
        answer = w.chat_view.live_widget(1)
        target = answer.buttons["regenerate"] if answer is not None else None
        w.input.editor.setFocus()
        for _ in range(40):  # Tab, as a person would, until the answer's Regenerate has the keyboard
            if QApplication.focusWidget() is target:
                break
            press(Qt.Key.Key_Tab)
        QTimer.singleShot(300, lambda: (shoot("focus-dark.png"), sheet()))

    def sheet() -> None:
        press(Qt.Key.Key_Slash, Qt.KeyboardModifier.ControlModifier)
        QTimer.singleShot(600, lambda: (shoot("shortcuts.png"), shots.app.quit()))

    w.model_loaded.connect(loaded)
    w.controller.answer_finished.connect(answered)
    QTimer.singleShot(300, lambda: w.load_model(str(model)))
    shots.run(120_000)
    return 0 if len(shots.saved) == 2 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
