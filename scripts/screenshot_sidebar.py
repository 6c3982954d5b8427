"""Screenshots of the sidebar in plain words, under Xvfb: light at 1400×900, a tooltip in the engine's
words, and dark and light at 900×600 (where nothing may be cut off: the figures wrap, then scroll).

The bundled SmolLM2 answers one short message (greedy, a few tokens: the speed plot keeps its curve
after a short answer too), then the window is shot at each size and theme. Saves, under <out>:
sidebar-light-1400.png, sidebar-tooltip.png, sidebar-dark-1400.png, sidebar-light-900.png,
sidebar-dark-900.png (the window only). Needs Xvfb and the bundled model.

    python scripts/screenshot_sidebar.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from PySide6.QtCore import QPoint, QTimer
    from PySide6.QtWidgets import QFormLayout, QToolTip

    from prefill.store.app_settings import Settings
    from prefill.ui.widgets.theme import apply_theme

    model = bundled_model()

    def steady(s: Settings) -> Settings:
        return s.with_values({"sampling.temperature": 0.0, "sampling.max_tokens": 48, "model.n_ctx": 4096,
                              "model.n_gpu_layers": "none", "model.n_threads": 1})

    shots = Shots(out, steady, None)
    w, app = shots.window, shots.app

    def shoot_window(name: str) -> None:
        shots.shoot(name, window_only=True)

    def at(width: int, height: int, theme: str, then: object) -> None:
        w.set_theme(apply_theme(app, theme))
        w.resize(width, height)
        w.splitter.setSizes([int(width * 0.2), int(width * 0.5), int(width * 0.3)])
        QTimer.singleShot(400, then)  # type: ignore[arg-type]

    def tooltip_shot() -> None:
        side = w.sidebar
        value = side.labels["itl"]
        form = value.parentWidget().layout()
        assert isinstance(form, QFormLayout)
        title = form.labelForField(value)
        assert title is not None
        side.scroller.ensureWidgetVisible(title)
        app.processEvents()
        QToolTip.showText(title.mapToGlobal(QPoint(10, title.height())), title.toolTip(), title)
        QTimer.singleShot(500, lambda: (shoot_window("sidebar-tooltip.png"), QToolTip.hideText(),
                                        at(1400, 900, "dark", dark_1400)))

    def dark_1400() -> None:
        shoot_window("sidebar-dark-1400.png")
        at(900, 600, "light", light_900)

    def light_900() -> None:
        shoot_window("sidebar-light-900.png")
        at(900, 600, "dark", dark_900)

    def dark_900() -> None:
        shoot_window("sidebar-dark-900.png")
        QTimer.singleShot(100, app.quit)

    def on_finished(_f: object) -> None:
        w.move(0, 0)
        at(1400, 900, "light", lambda: (shoot_window("sidebar-light-1400.png"), tooltip_shot()))

    def send() -> None:
        w.input.editor.setPlainText("What is the capital of France? Answer in one short sentence.")
        w.input._on_editor_submit()

    w.model_loaded.connect(lambda _m: QTimer.singleShot(200, send))
    w.controller.answer_finished.connect(on_finished)
    QTimer.singleShot(300, lambda: w.load_model(str(model)))
    shots.run(180_000)
    return 0 if len(shots.saved) == 5 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
