"""Decode rate inside the window (rendering the stream, saving it) against the headless engine.

The GUI thread's Python work competes with the engine thread for the GIL; this measures
what that costs. Runs alternate app / headless on the same model, settings, prompt and seed.
Prints one JSON object per model.

    QT_QPA_PLATFORM=offscreen python benchmarks/app_decode_bench.py [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PROMPT = "Write a long essay about how language models generate text, token by token."


def headless(model: Path, settings, gen: int) -> float:  # noqa: ANN001 - store Settings
    from prefill.engine.events import Finished
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.message import Message
    from prefill.engine.request import ChatRequest

    engine = ChatEngine.load(model, settings.model.load_settings())
    try:
        for ev in engine.stream(ChatRequest.of([Message("user", PROMPT)], settings.sampling)):
            if isinstance(ev, Finished):
                return ev.metrics.decode_tps
    finally:
        engine.close()
    return 0.0


def in_app(app, model: Path, settings, data: Path) -> float:  # noqa: ANN001
    from PySide6.QtCore import QEventLoop, QTimer

    from prefill.store import HistoryStore, SettingsFile
    from prefill.ui.main_window import MainWindow
    from prefill.ui.workers.engine_worker import EngineThread
    from prefill.ui.workers.store_worker import StoreProxy, Stores

    store = StoreProxy(Stores(HistoryStore(data / "h.sqlite3"), SettingsFile(data / "s.json")))
    engine = EngineThread()
    w = MainWindow(settings, store, engine, None)
    w.resize(1280, 800)
    w.show()
    loop = QEventLoop()
    result: dict[str, float] = {}
    w.model_loaded.connect(lambda _m: w.controller.send(PROMPT))
    w.controller.answer_finished.connect(lambda f: (result.update(tps=f.metrics.decode_tps), loop.quit()))
    QTimer.singleShot(0, lambda: w.load_model(str(model)))
    QTimer.singleShot(600_000, loop.quit)
    loop.exec()
    w.close()
    engine.stop()
    store.stop()
    w.deleteLater()
    return result.get("tps", 0.0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0: the app's automatic choice)")
    args = ap.parse_args()

    from PySide6.QtWidgets import QApplication

    from prefill.bench.tiny_model import write_tiny_llama
    from prefill.hub.bundled import bundled_model_path
    from prefill.store.app_settings import Settings

    sys.setswitchinterval(float(os.environ.get('SWITCH', '0.001')))  # as the app sets it
    app = QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory() as tmp:
        tiny = write_tiny_llama(Path(tmp) / "tiny.gguf")
        runs = [("tiny", tiny, 2048)]
        smol = bundled_model_path()
        if smol is not None:
            runs.append(("smollm2", smol, 256))
        for label, model, gen in runs:
            s = Settings()
            s = replace(s, model=replace(s.model, n_ctx=4096, n_gpu_layers="none", n_threads=args.threads),
                        sampling=replace(s.sampling, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                                         repeat_penalty=1.0, seed=42, max_tokens=gen))
            app_tps, head_tps = [], []
            for i in range(args.reps):
                app_tps.append(in_app(app, model, s, Path(tmp) / f"{label}{i}"))
                (Path(tmp) / f"{label}{i}").mkdir(exist_ok=True)
                head_tps.append(headless(model, s, gen))
            a, h = statistics.median(app_tps), statistics.median(head_tps)
            print(json.dumps({"model": label, "gen_tokens": gen, "app_decode_tps": round(a, 1),
                              "headless_decode_tps": round(h, 1), "ratio": round(a / h, 3) if h else None,
                              "app_runs": [round(x, 1) for x in app_tps],
                              "headless_runs": [round(x, 1) for x in head_tps]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
