"""A screenshot of the window with two models in memory, under Xvfb: residents-picker.png.

The bundled SmolLM2 and a tiny model (prefill.bench.tiny_model) in the library; the window loads
SmolLM2, then the tiny one, so both are resident, and opens the model picker's list: each resident
model marked with a dot and its memory, the sidebar's In memory line against the budget.

    python scripts/screenshot_residents.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402


def prepare(home: Path) -> list[str]:
    from prefill.bench.tiny_model import write_tiny_llama

    library = home / "library"
    library.mkdir(parents=True)
    return [str(write_tiny_llama(library / "tiny-llama-4k.gguf", n_vocab=4000))]


def inside(out: Path, tiny: str) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    smollm2 = bundled_model()
    shots = Shots(out, lambda s: replace(s, ui=replace(s.ui, models_dir=str(Path(tiny).parent)),
                                         memory=replace(s.memory, budget_mb=12_288)), smollm2)
    w = shots.window
    loads = [str(smollm2), tiny]

    def on_loaded(_m: object) -> None:
        if loads:
            w.load_model(loads.pop(0))
            return
        w.model_loaded.disconnect(on_loaded)
        QTimer.singleShot(500, w.picker.combo.showPopup)
        QTimer.singleShot(1500, lambda: (shots.shoot("residents-picker.png"), shots.app.quit()))

    w.model_loaded.connect(on_loaded)
    QTimer.singleShot(500, lambda: w.load_model(loads.pop(0)))
    shots.run(120_000)
    return 0 if shots.saved else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3]))
    raise SystemExit(main_for(__file__, prepare))
