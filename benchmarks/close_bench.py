"""Time to close the window during an answer and during a model load (the goal: under 2 s).

From `close()` to the window closed and the engine and store threads stopped, as the app
does on quit. During an answer the close first waits for the answer to stop and be saved
(the run checks it was saved with finish reason "cancelled"); during a load, the close
cancels it through llama.cpp's progress callback. Prints one JSON object.

    QT_QPA_PLATFORM=offscreen python benchmarks/close_bench.py [--reps 3] [--model PATH] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PROMPT = "Write a very long story about a dragon and a knight."


def _wait(until, timeout_ms: int = 120_000) -> None:
    from PySide6.QtCore import QCoreApplication, QDeadlineTimer, QEventLoop

    deadline = QDeadlineTimer(timeout_ms)
    while not until():
        if deadline.hasExpired():
            raise SystemExit("timed out")
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)


def _window(data: Path, threads: int):
    from prefill.store import HistoryStore, SettingsFile
    from prefill.store.app_settings import Settings
    from prefill.ui.app import StartSettings, build_window

    s = Settings()
    s = replace(s, model=replace(s.model, n_ctx=2048, n_gpu_layers="none", n_threads=threads),
                sampling=replace(s.sampling, max_tokens=2000, temperature=0.8, seed=1))
    w, store, engine = build_window(StartSettings(s), SettingsFile(data / "settings.json"),
                                    HistoryStore(data / "history.sqlite3"), None)
    w.show()
    return w, store, engine


def _close(w, store, engine) -> float:
    closed: list[bool] = []
    w.closed.connect(lambda: closed.append(True))
    t0 = time.perf_counter()
    w.close()
    _wait(lambda: bool(closed))
    engine.stop()
    store.stop()
    return (time.perf_counter() - t0) * 1000


def during_answer(model: Path, threads: int) -> tuple[float, str]:
    from prefill.store import HistoryStore

    with tempfile.TemporaryDirectory() as home:
        w, store, engine = _window(Path(home), threads)
        loaded: list[object] = []
        w.model_loaded.connect(loaded.append)
        w.load_model(str(model))
        _wait(lambda: bool(loaded))
        w.controller.send(PROMPT)
        _wait(lambda: w.transcript.rowCount() == 2 and len(w.transcript.row(1).content) > 40)
        ms = _close(w, store, engine)
        with HistoryStore(Path(home) / "history.sqlite3") as history:
            stored = history.messages(w.controller.conversation_id)
        return ms, stored[-1].finish_reason or ""


def during_load(model: Path, threads: int) -> float:
    from PySide6.QtCore import Qt

    with tempfile.TemporaryDirectory() as home:
        w, store, engine = _window(Path(home), threads)
        reading, gate = threading.Event(), threading.Event()

        def hold(_p: float) -> None:  # engine thread: keep llama.cpp mid-load until the close begins
            if not reading.is_set():
                reading.set()
                gate.wait(10)

        engine.worker.load_progress.connect(hold, Qt.ConnectionType.DirectConnection)
        w.load_model(str(model))
        _wait(reading.is_set)
        closed: list[bool] = []
        w.closed.connect(lambda: closed.append(True))
        t0 = time.perf_counter()
        w.close()
        gate.set()
        _wait(lambda: bool(closed))
        engine.stop()
        store.stop()
        return (time.perf_counter() - t0) * 1000


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from prefill.hub.bundled import bundled_model_path

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--model", type=Path, default=bundled_model_path())
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.model is None:
        raise SystemExit("no --model and the bundled model is not installed")
    app = QApplication.instance() or QApplication([])
    answers = [during_answer(args.model, args.threads) for _ in range(args.reps)]
    loads = [during_load(args.model, args.threads) for _ in range(args.reps)]
    app.processEvents()
    print(json.dumps({
        "model": args.model.name,
        "close_during_answer_ms": {"median": round(statistics.median(a[0] for a in answers)),
                                   "runs": [round(a[0]) for a in answers]},
        "answer_saved_as": sorted({a[1] for a in answers}),
        "close_during_load_ms": {"median": round(statistics.median(loads)), "runs": [round(x) for x in loads]},
        "goal_ms": 2000,
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
