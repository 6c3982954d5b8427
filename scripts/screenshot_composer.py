"""Screenshots of the composer under Xvfb, light (composer.png) and dark (composer-dark.png): the card
with a question typed and a document attached, the attach buttons and Send inside it, and the context
meter under it showing its parts: the system prompt, an MCP server's tools (the SDK weather server of
tests/commands/weather_mcp_server.py), the document read whole, and the conversation so far.

The chat model is the bundled SmolLM2; the documents' embedding model the bundled one. Needs Xvfb.

    python scripts/screenshot_composer.py [--out packaging/screenshots]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import ROOT, Shots, bundled_model, under_xvfb  # noqa: E402

SYSTEM = "You are a careful keeper of records. Answer in one or two sentences."
FIRST = "Hello! What can you help me with?"
QUESTION = "Who keeps the lighthouse on Skerry Point, and since when?"
NOTE = ("# The lighthouse\n\nThe lighthouse on Skerry Point is kept by Ingrid Dahl, who took it over from her "
        "father in 1987. Its lamp turns every twelve seconds and can be seen 18 nautical miles out.\n\n"
        "## Visits\n\nThe tower is open on Saturdays from May to September; the key is at the harbour office.\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("packaging/screenshots"))
    out = ap.parse_args().out
    status = 0
    for theme in ("light", "dark"):
        status |= under_xvfb(__file__, out, lambda home, t=theme: prepare(home, t))
    return status


def prepare(home: Path, theme: str) -> list[str]:
    """The MCP servers' file and the note to attach, in the throw-away home."""
    config = home / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "forecast": {"command": sys.executable, "args": [str(ROOT / "tests" / "commands" / "weather_mcp_server.py")]},
    }}))
    note = home / "lighthouse.md"
    note.write_text(NOTE)
    return [str(config), str(note), theme]


def inside(out: Path, config: str, note: str, theme: str) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    from prefill.mcp_tools.state import ServerStatus

    def adjust(s: object) -> object:
        return replace(s, sampling=replace(s.sampling, temperature=0.0, max_tokens=40),  # type: ignore
                       model=replace(s.model, n_ctx=4096))  # type: ignore

    shots = Shots(out, adjust, None, theme, mcp_config=Path(config))
    w, mcp = shots.window, shots.mcp
    assert mcp is not None
    name = "composer.png" if theme == "light" else "composer-dark.png"

    def loaded(_m: object) -> None:
        w.model_loaded.disconnect(loaded)
        w.controller.choices.set_system_prompt(SYSTEM)
        w.chat_view.set_system_prompt(SYSTEM)
        w.controller.answer_finished.connect(answered)
        w.controller.send(FIRST)

    def answered(_f: object) -> None:
        w.controller.answer_finished.disconnect(answered)
        w.documents.indexed.connect(indexed)
        w.documents.attach([note])

    def indexed(_done: object) -> None:
        w.documents.indexed.disconnect(indexed)
        w.index_panel.hide()  # its "Indexed 1 file" line has said its piece
        mcp.changed.connect(tools_ready)
        mcp.start_all()

    def tools_ready() -> None:
        state = mcp.states.get("forecast")
        if state is None or state.status is ServerStatus.STARTING:
            return
        mcp.changed.disconnect(tools_ready)
        w.activateWindow()  # the field's focus shows on the card's border
        w.input.editor.setFocus()
        w.input.editor.setPlainText(QUESTION)
        wait_meter()

    def wait_meter() -> None:
        p = w.input.meter.parts
        if p is None or not (p.tools and p.documents and p.system):
            QTimer.singleShot(100, wait_meter)
            return
        print(f"meter: {w.input.count.text()}", flush=True)
        QTimer.singleShot(500, lambda: (shots.shoot(name), shots.app.quit()))

    w.model_loaded.connect(loaded)
    QTimer.singleShot(300, lambda: w.load_model(str(bundled_model())))
    shots.run(240_000)
    return 0 if shots.saved == [name] else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]))
    raise SystemExit(main())
