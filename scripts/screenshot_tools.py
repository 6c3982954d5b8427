"""Screenshots of tools in the window under Xvfb: the question before a call runs, the call's
folded row once the turn ended, the chat's Tools menu, and the Tools dialog (one server ready, one failed).

The model is the scripted caller of tests/engine/vocab_models.py (Qwen2's real tokenizer): it
answers every turn with forecast__weather(city="Oslo"); the tool is served by the SDK server
tests/commands/weather_mcp_server.py. Saves <out>/tool-approval.png, tool-round-folded.png,
tools-menu.png and tools-dialog.png. Needs Xvfb.

    python scripts/screenshot_tools.py [--out packaging/screenshots]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.xvfb import ROOT, Shots, main_for  # noqa: E402


def prepare(home: Path) -> list[str]:
    from tests.engine.vocab_models import write_caller

    model = write_caller(home / "caller.gguf", ("forecast", "__", "weather"))
    config = home / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "forecast": {"command": sys.executable, "args": [str(ROOT / "tests" / "commands" / "weather_mcp_server.py")]},
        "notes": {"command": str(home / "notes-server-not-installed")},
    }}))
    return [str(model), str(config)]


def main() -> int:
    return main_for(__file__, prepare)


def inside(out: Path, model: str, config: str) -> int:
    from dataclasses import replace

    from PySide6.QtCore import QTimer

    from prefill.mcp_tools.state import ServerStatus

    # the caller calls on every turn: one round is the picture
    shots = Shots(out, lambda s: replace(s, sampling=replace(s.sampling, temperature=0.0)).with_values(
        {"ui.max_tool_rounds": 1}), None, mcp_config=Path(config))
    w, shoot, mcp = shots.window, shots.shoot, shots.mcp
    assert mcp is not None
    state = {"loaded": False, "sent": False}

    def ready() -> bool:
        return bool(mcp.states) and all(s.status is not ServerStatus.STARTING for s in mcp.states.values())

    def maybe_send() -> None:
        if state["loaded"] and ready() and not state["sent"]:
            state["sent"] = True
            w.input.editor.setPlainText("What is the weather in Oslo today?")
            w.input._on_editor_submit()

    def asked(_call: object) -> None:
        QTimer.singleShot(300, lambda: (shoot("tool-approval.png"), w.tool_approval.allow_once.click()))

    def answered(_f: object) -> None:
        QTimer.singleShot(400, lambda: (shoot("tool-round-folded.png"), chat_menu()))

    def chat_menu() -> None:
        menu = w.tools_button.menu()
        # showMenu runs the menu's own event loop: shoot from inside it, then close it
        QTimer.singleShot(400, lambda: (shoot("tools-menu.png"), menu.close(), QTimer.singleShot(0, dialog)))
        w.tools_button.showMenu()

    def dialog() -> None:
        w.open_tools()
        QTimer.singleShot(500, lambda: (shoot("tools-dialog.png"), shots.app.quit()))

    def loaded(_m: object) -> None:
        state["loaded"] = True
        maybe_send()

    mcp.changed.connect(maybe_send)
    w.model_loaded.connect(loaded)
    w.controller.tool_asked.connect(asked)
    w.controller.answer_finished.connect(answered)
    mcp.start_all()
    QTimer.singleShot(300, lambda: w.load_model(model))
    shots.run(120_000)
    return 0 if len(shots.saved) == 4 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        raise SystemExit(inside(Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
    raise SystemExit(main())
