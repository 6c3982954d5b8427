"""Screenshots of the Settings dialog under Xvfb, over the window with the bundled SmolLM2 loaded: its
Model tab (the loaded model's own load settings under their heading, then those for every model, each
label beside its field and a number's box with its range beside it), light and dark.

Saves, under <out>: settings-model-light.png and settings-model-dark.png.

    python scripts/screenshot_settings.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

NAMES = {"light": "settings-model-light.png", "dark": "settings-model-dark.png"}


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from PySide6.QtCore import QTimer

    from prefill.ui.settings_dialog import SettingsDialog
    from prefill.ui.widgets.theme import apply_theme

    model = bundled_model()
    shots = Shots(out, lambda s: s.with_values({"model.n_gpu_layers": "none", "model.n_threads": 1}), None)
    w, app = shots.window, shots.app

    def dialog_shot(theme: str, then: object) -> None:
        w.set_theme(apply_theme(app, theme))
        dialog = SettingsDialog(w.settings, w, w.cache_usage, w.loaded)
        dialog.tabs.setCurrentIndex(1)  # Model
        dialog.show()
        QTimer.singleShot(500, lambda: (shots.shoot(NAMES[theme]), dialog.reject(), then()))  # type: ignore[operator]

    def in_turn(_m: object) -> None:
        QTimer.singleShot(300, lambda: dialog_shot("light", lambda: dialog_shot(
            "dark", lambda: QTimer.singleShot(100, app.quit))))

    w.model_loaded.connect(in_turn)
    QTimer.singleShot(300, lambda: w.load_model(str(model)))
    shots.run(120_000)
    return 0 if len(shots.saved) == len(NAMES) else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
