"""Screenshots of a reasoning answer under Xvfb: while it thinks (Thinking open) and finished
(Thinking folded, answer shown).

The model is a scripted one with Qwen2's real tokenizer (see tests/engine/vocab_models.py):
it writes a fixed thinking and answer through a template that opens `<think>`. Saves
<out>/reasoning-streaming.png and <out>/reasoning-finished.png. Needs Xvfb.

    python scripts/screenshot_reasoning.py [--out screenshots]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THINK = "Multiply tens part first, then add what ones contribute; finally double-check using reversed order."
ANSWER = "It is **391**."


def write_model(path: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.engine.vocab_models import write_thinker

    return write_thinker(path, THINK, ANSWER)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("screenshots"))
    args = ap.parse_args()
    if not shutil.which("Xvfb"):
        print("Xvfb is missing: apt-get install xvfb", file=sys.stderr)
        return 1
    display = ":96"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1400x900x24", "-nolisten", "tcp"])
    home = tempfile.mkdtemp(prefix="prefill-shot-")
    try:
        time.sleep(1.0)
        model = write_model(Path(home) / "thinker.gguf")
        env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb",
                   XDG_DATA_HOME=f"{home}/data", XDG_CONFIG_HOME=f"{home}/config")
        args.out.mkdir(parents=True, exist_ok=True)
        return subprocess.call([sys.executable, __file__, "--inside", str(args.out.resolve()), str(model)], env=env)
    finally:
        xvfb.terminate()
        shutil.rmtree(home, ignore_errors=True)


def inside(out: Path, model: str) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from prefill.store import HistoryStore, SettingsFile
    from prefill.ui.engine_worker import EngineThread
    from prefill.ui.main_window import MainWindow
    from prefill.ui.store_worker import StoreProxy, Stores
    from prefill.ui.theme import apply_theme
    from prefill.ui.transcript_model import Roles

    app = QApplication(sys.argv[:1])
    settings_file = SettingsFile()
    settings = settings_file.load()
    settings = replace(settings, sampling=replace(settings.sampling, temperature=0.7, seed=7))
    store = StoreProxy(Stores(HistoryStore(), settings_file))
    engine = EngineThread()
    w = MainWindow(settings, store, engine, None, apply_theme(app, "light"))
    w.resize(1380, 880)
    w.move(10, 10)
    w.show()
    state = {"streaming": False}

    def shoot(name: str) -> None:
        app.processEvents()
        app.primaryScreen().grabWindow(0).save(str(out / name))
        print(f"saved {out / name}", flush=True)

    def on_changed(top: object, _bottom: object, roles: list[int]) -> None:
        row = w.transcript.row(top.row())  # type: ignore[attr-defined]
        if not state["streaming"] and Roles.REASONING in roles and len(row.reasoning) > 40 and not row.content:
            state["streaming"] = True
            shoot("reasoning-streaming.png")

    def on_loaded(_m: object) -> None:
        w.input.editor.setPlainText("What is 17 × 23?")
        w.input._on_editor_submit()

    w.transcript.dataChanged.connect(on_changed)
    w.model_loaded.connect(on_loaded)
    w.controller.answer_finished.connect(lambda _f: QTimer.singleShot(300, lambda: (shoot("reasoning-finished.png"),
                                                                                  app.quit())))
    QTimer.singleShot(500, lambda: w.load_model(model))
    QTimer.singleShot(120_000, app.quit)
    app.exec()
    engine.stop()
    store.stop()
    return 0 if state["streaming"] else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3]))
    raise SystemExit(main())
