"""Start Prefill on a virtual X screen, send one message with the bundled model, take screenshots.

Saves <out>/window-welcome.png, window-mid-answer.png (while tokens stream), window-answered.png
and models-page.png (the library; no hub is reached).
Needs Xvfb (`apt-get install xvfb`). User data goes to a temporary folder.

    python scripts/screenshot.py [--out packaging/screenshots] [--theme light|dark]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, under_xvfb  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("packaging/screenshots"))
    ap.add_argument("--theme", default="light")
    ap.add_argument("--message", default="Write a short Python function that checks if a number is prime, "
                                         "then explain it in two sentences.")
    args = ap.parse_args()
    return under_xvfb(__file__, args.out, lambda _home: [args.theme, args.message])


def inside(out: Path, theme: str, message: str) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    from prefill.hub.bundled import bundled_model_path

    shots = Shots(out, lambda s: replace(s, ui=replace(s.ui, theme=theme), sampling=replace(
        s.sampling, max_tokens=220, temperature=0.2, seed=7)), bundled_model_path(), theme)
    w, shoot = shots.window, shots.shoot
    shoot("window-welcome.png")
    state = {"mid": False}

    def on_loaded(_m: object) -> None:
        w.input.editor.setPlainText(message)
        w.input._on_editor_submit()  # as if Enter was pressed

    def poll() -> None:
        rows = w.transcript.rows()
        if not state["mid"] and len(rows) == 2 and len(rows[1].content) > 120:
            state["mid"] = True
            shoot("window-mid-answer.png")

    def models_page() -> None:
        w.open_models()
        QTimer.singleShot(1500, lambda: (shoot("models-page.png"), shots.app.quit()))

    def done(_f: object) -> None:
        QTimer.singleShot(300, lambda: (shoot("window-answered.png"), models_page()))

    w.model_loaded.connect(on_loaded)
    w.controller.answer_finished.connect(done)
    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(50)
    QTimer.singleShot(500, lambda: w.load_model(str(bundled_model_path())))
    shots.run(180_000)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
    raise SystemExit(main())
