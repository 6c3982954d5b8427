"""Start Prefill on a virtual X screen, send one message with the bundled model, take screenshots.

Saves <out>/window-welcome.png, window-mid-answer.png (while tokens stream), window-answered.png
and models-page.png (the library; no hub is reached).
Needs Xvfb (`apt-get install xvfb`). User data goes to a temporary folder.

    python scripts/screenshot.py [--out screenshots] [--theme light|dark]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import under_xvfb  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("screenshots"))
    ap.add_argument("--theme", default="light")
    ap.add_argument("--message", default="Write a short Python function that checks if a number is prime, "
                                         "then explain it in two sentences.")
    args = ap.parse_args()
    return under_xvfb(__file__, args.out, lambda _home: [args.theme, args.message])


def inside(out: Path, theme: str, message: str) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from prefill.hub.bundled import bundled_model_path
    from prefill.store import HistoryStore, SettingsFile
    from prefill.ui.engine_worker import EngineThread
    from prefill.ui.main_window import MainWindow
    from prefill.ui.store_worker import StoreProxy, Stores
    from prefill.ui.theme import apply_theme

    app = QApplication(sys.argv[:1])
    settings_file = SettingsFile()
    settings = settings_file.load()
    settings = replace(settings, ui=replace(settings.ui, theme=theme),
                       sampling=replace(settings.sampling, max_tokens=220, temperature=0.2, seed=7))
    effective = apply_theme(app, theme)
    store = StoreProxy(Stores(HistoryStore(), settings_file))
    engine = EngineThread()
    w = MainWindow(settings, store, engine, bundled_model_path(), effective)
    w.resize(1380, 880)
    w.move(10, 10)
    w.show()

    def shoot(name: str) -> None:
        app.processEvents()
        pix = app.primaryScreen().grabWindow(0)  # the X server's framebuffer, as a person sees it
        pix.save(str(out / name))
        print(f"saved {out / name}", flush=True)

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
        QTimer.singleShot(1500, lambda: (shoot("models-page.png"), app.quit()))

    def done(_f: object) -> None:
        QTimer.singleShot(300, lambda: (shoot("window-answered.png"), models_page()))

    w.model_loaded.connect(on_loaded)
    w.controller.answer_finished.connect(done)
    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(50)
    QTimer.singleShot(500, lambda: w.load_model(str(bundled_model_path())))
    QTimer.singleShot(180_000, app.quit)
    app.exec()
    engine.stop()
    store.stop()
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
    raise SystemExit(main())
