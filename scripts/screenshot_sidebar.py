"""Screenshots of the compact sidebar and the window's notices, under Xvfb.

The bundled SmolLM2 answers one message (greedy, a paragraph: the speed plot has a curve), then the
window is shot: the sidebar light and dark at 1400×900 and 900×600 (at 900 px with the chat list
folded), a tooltip in the engine's words, Details opened, the chat opened again (its plot drawn from
the curve kept with the answer), a toast and a banner. Saves, under <out>: sidebar-light-1400.png,
sidebar-tooltip.png, sidebar-dark-1400.png, sidebar-light-900.png, sidebar-dark-900.png,
sidebar-details.png, sidebar-reopened.png, notice-toast.png, notice-banner.png (the window only).
Needs Xvfb and the bundled model.

    python scripts/screenshot_sidebar.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

SHOTS = 9


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from PySide6.QtCore import QPoint, QTimer
    from PySide6.QtWidgets import QToolTip

    from prefill.store.app_settings import Settings
    from prefill.ui.widgets.theme import apply_theme

    model = bundled_model()

    def steady(s: Settings) -> Settings:
        return s.with_values({"sampling.temperature": 0.0, "sampling.max_tokens": 160, "model.n_ctx": 4096,
                              "model.n_gpu_layers": "none", "model.n_threads": 1})

    shots = Shots(out, steady, None)
    w, app = shots.window, shots.app

    def shoot_window(name: str) -> None:
        shots.shoot(name, window_only=True)

    def at(width: int, height: int, theme: str, then: Callable[[], None]) -> None:
        w.set_theme(apply_theme(app, theme))
        # At 900 px the chat list is folded (its Chats button), as on a small screen: with it open, its
        # buttons (264 px) and the chat (522 px) leave the sidebar about 110 px.
        w.panels.set_shown("chats", width > 1000)
        w.resize(width, height)
        w.splitter.setSizes([int(width * 0.2), int(width * 0.5), int(width * 0.3)])
        QTimer.singleShot(400, then)

    def later(ms: int, then: Callable[[], None]) -> None:
        QTimer.singleShot(ms, then)

    def tooltip_shot() -> None:
        target = w.sidebar.headline.first_word
        QToolTip.showText(target.mapToGlobal(QPoint(10, target.height())), target.toolTip(), target)
        later(500, lambda: (shoot_window("sidebar-tooltip.png"), QToolTip.hideText(), details_shot()))

    def details_shot() -> None:
        w.sidebar.details_toggle.setChecked(True)
        later(300, lambda: (shoot_window("sidebar-details.png"), w.sidebar.details_toggle.setChecked(False),
                            at(1400, 900, "dark", dark_1400)))

    def dark_1400() -> None:
        shoot_window("sidebar-dark-1400.png")
        at(900, 600, "light", light_900)

    def light_900() -> None:
        shoot_window("sidebar-light-900.png")
        at(900, 600, "dark", dark_900)

    def dark_900() -> None:
        shoot_window("sidebar-dark-900.png")
        at(1400, 900, "light", reopen)

    def reopen() -> None:
        first = w.controller.conversation_id
        w.controller.new_conversation()

        def back() -> None:
            if first is not None:
                w.controller.open_conversation(first)
            later(600, lambda: (shoot_window("sidebar-reopened.png"), toast()))

        later(300, back)

    def toast() -> None:
        w.toast.lifetime_ms = 10_000
        w.show_toast("Exported 1 chat to /home/ada/chats/capital-of-france.md.")
        later(300, lambda: (shoot_window("notice-toast.png"), w.toast.clear(), banner()))

    def banner() -> None:
        w.show_notice("The conversation is 212 tokens too long for the 4,096-token context. Your message is "
                      "kept: retry it, or edit it.", action=("New chat", w.controller.new_conversation))
        later(300, lambda: (shoot_window("notice-banner.png"), later(100, app.quit)))

    def on_finished(_f: object) -> None:
        w.move(0, 0)
        at(1400, 900, "light", lambda: (shoot_window("sidebar-light-1400.png"), tooltip_shot()))

    def send() -> None:
        w.input.editor.setPlainText("Write a short paragraph about Paris, the capital of France.")
        w.input._on_editor_submit()

    w.model_loaded.connect(lambda _m: later(200, send))
    w.controller.answer_finished.connect(on_finished)
    later(300, lambda: w.load_model(str(model)))
    shots.run(180_000)
    return 0 if len(shots.saved) == SHOTS else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
