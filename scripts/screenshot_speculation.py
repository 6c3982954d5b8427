"""A screenshot of the sidebar while a speculative answer streams, under Xvfb.

The bundled SmolLM2 first copies a passage plainly (the rate speculation is compared with), then,
with drafts from the text itself switched on as the Settings dialog does (no reload), copies it
again in a new chat; the shot is taken mid-answer, with the Speculation figures and strip live.
Greedy, repeat penalty 1, flash attention on: what speculation needs. Saves
<out>/speculation-sidebar.png. Needs Xvfb and the bundled model.

    python scripts/screenshot_speculation.py [--out packaging/screenshots]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, bundled_model, main_for  # noqa: E402

# Answer tokens streamed when the picture is taken. The speculative answer need not be the plain one
# (its batched logits drift: the sidebar says whether the text is the same) and ended near 75 tokens
# where the plain one ran to 260: at 100 the picture was never taken.
SHOT_AT = 40


def main() -> int:
    return main_for(__file__)


def inside(out: Path) -> int:
    from PySide6.QtCore import QTimer

    from prefill.bench.speculative_compare import TASKS
    from prefill.engine.events import MetricsSnapshot
    from prefill.store.app_settings import Settings

    model = bundled_model()
    prompt = dict(TASKS)["copy"]

    def greedy(s: Settings) -> Settings:
        return s.with_values({"sampling.temperature": 0.0, "sampling.repeat_penalty": 1.0,
                              "sampling.max_tokens": 260, "model.flash_attn": True, "model.n_ctx": 2048,
                              "model.n_gpu_layers": "none", "model.speculative": "off",
                              "model.n_threads": 1})  # one thread: steadier on a shared machine

    shots = Shots(out, greedy, None)
    w, shoot = shots.window, shots.shoot
    state = {"round": 0, "shot": False}

    def send() -> None:
        w.input.editor.setPlainText(prompt)
        w.input._on_editor_submit()

    def on_loaded(_m: object) -> None:
        send()  # plain first: the rate the speculative answer is compared with

    def on_finished(_f: object) -> None:
        state["round"] += 1
        if state["round"] == 1:
            w.settings = w.settings.replace("model.speculative", "ngram")  # the worker subscribes: it speculates now
            w.controller.new_conversation(then=lambda _id: QTimer.singleShot(300, send))
        else:
            QTimer.singleShot(300, shots.app.quit)

    def on_metrics(_request: int, m: MetricsSnapshot) -> None:
        if state["round"] == 1 and not state["shot"] and m.draft_n and m.completion_tokens >= SHOT_AT:
            state["shot"] = True
            w.sidebar.scroller.ensureWidgetVisible(w.sidebar.speculation_box)  # below the fold at 900 px
            QTimer.singleShot(0, lambda: shoot("speculation-sidebar.png"))

    w.model_loaded.connect(on_loaded)
    w.controller.answer_finished.connect(on_finished)
    w.engine.worker.metrics.connect(on_metrics)
    QTimer.singleShot(300, lambda: w.load_model(str(model)))
    shots.run(240_000)
    if not state["shot"]:  # say why: the run otherwise ends with no picture and no word
        print(f"speculation-sidebar.png was not taken: no speculative answer reached {SHOT_AT} tokens with "
              f"drafts checked (answers finished: {state['round']})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2])))
    raise SystemExit(main())
