"""A screenshot of compaction in the window under Xvfb: a chat on a 512-token context with the
"summarise" policy went past the threshold, the model summarised the earlier turns (the summary row,
opened; the turns before it dimmed as folded), and the chat went on from it (compaction.png).

The model is the bundled SmolLM2-135M, greedy, so the picture is the same on every run. Needs Xvfb.

    python scripts/screenshot_compaction.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

QUESTIONS = [
    "My name is Ada and I keep three goats called Pip, Bo and Moss. Describe a goat.",
    "What do goats eat in winter? Answer in detail.",
    "Write a short poem about a farm in the hills.",
    "List five jobs a farmer does in spring.",
]
AFTER = "What is my name?"


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    from prefill.ui.chat.transcript.summary_rows import SUMMARY

    def small(s: object) -> object:
        return replace(s, model=replace(s.model, n_ctx=512, overflow_policy="summarise"),  # type: ignore
                       sampling=replace(s.sampling, temperature=0.0, max_tokens=96))  # type: ignore

    shots = Shots(out, small, None)
    w, shoot = shots.window, shots.shoot
    c = w.controller
    asked = iter(QUESTIONS)
    compacted: list[object] = []

    def ask_next(_f: object = None) -> None:
        if c.busy:  # compacting after this answer: the next question waits for the summary
            return
        if compacted:
            QTimer.singleShot(300, show)
            return
        question = next(asked, None)
        if question is not None:
            QTimer.singleShot(100, lambda: c.send(question))

    def after_summary(summary: object) -> None:
        compacted.append(summary)
        QTimer.singleShot(100, lambda: c.send(AFTER))

    def show() -> None:
        rows = w.transcript.rows()
        at = max(i for i, r in enumerate(rows) if r.role == SUMMARY)
        widget = w.chat_view.live_widget(at)
        if widget is not None:
            widget.toggle.setChecked(True)
        QTimer.singleShot(300, lambda: w.chat_view.scroll_to_row(max(0, at - 1)))
        QTimer.singleShot(900, lambda: (shoot("compaction.png", window_only=True), shots.app.quit()))

    w.model_loaded.connect(lambda _m: ask_next())
    c.answer_finished.connect(ask_next)
    c.compaction.compacted.connect(after_summary)
    QTimer.singleShot(300, lambda: w.load_model(str(bundled_model())))
    shots.run(300_000)
    return 0 if shots.saved else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
