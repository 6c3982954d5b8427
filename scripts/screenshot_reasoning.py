"""Screenshots of a reasoning answer under Xvfb: while it thinks (Thinking open) and finished
(Thinking folded, answer shown).

The model is a scripted one with Qwen2's real tokenizer (see tests/engine/vocab_models.py):
it writes a fixed thinking and answer through a template that opens `<think>`. Saves
<out>/reasoning-streaming.png and <out>/reasoning-finished.png. Needs Xvfb.

    python scripts/screenshot_reasoning.py [--out packaging/screenshots]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import Shots, under_xvfb  # noqa: E402

THINK = "Multiply tens part first, then add what ones contribute; finally double-check using reversed order."
ANSWER = "It is **391**."


def write_model(home: Path) -> list[str]:
    from tests.engine.vocab_models import write_thinker

    return [str(write_thinker(home / "thinker.gguf", THINK, ANSWER))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("packaging/screenshots"))
    return under_xvfb(__file__, ap.parse_args().out, write_model)


def inside(out: Path, model: str) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    from prefill.ui.chat.transcript.transcript_model import Roles

    shots = Shots(out, lambda s: replace(s, sampling=replace(s.sampling, temperature=0.7, seed=7)), None)
    w, shoot = shots.window, shots.shoot
    state = {"streaming": False}

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
    w.controller.answer_finished.connect(lambda _f: QTimer.singleShot(300, lambda: (
        shoot("reasoning-finished.png"), shots.app.quit())))
    QTimer.singleShot(500, lambda: w.load_model(model))
    shots.run(120_000)
    return 0 if state["streaming"] else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3]))
    raise SystemExit(main())
