"""`prefill chat --mcp CONFIG --yes` on the scripted round tripper: it calls the SDK server's weather
tool, reads its result ("Sunny in Oslo, 21 °C.") and answers in plain text, so the turn ends by
itself after two rounds, well inside --max-tool-rounds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.commands.test_chat_mcp import ASK, HERE, SMALL, TOOL, one_turn, prefill
from tests.engine.vocab_models import write_round_tripper


@pytest.fixture(scope="module")
def tripper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_round_tripper(tmp_path_factory.mktemp("tripper") / "tripper.gguf", ("forecast", "__", "weather"))


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    servers = {"forecast": {"command": sys.executable, "args": [str(HERE / "weather_mcp_server.py")]}}
    path = tmp_path_factory.mktemp("mcp") / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_the_turn_calls_the_tool_then_answers_from_its_result(tmp_path: Path, tripper: Path, config: Path) -> None:
    out = prefill(tmp_path, "--model", str(tripper), "--mcp", str(config), "--yes", "--json", "--max-tool-rounds", "4",
                  *ASK, *SMALL)
    turn = one_turn(out)
    (ran,) = turn["tool_calls"]
    assert {k: ran[k] for k in ("name", "arguments", "result", "is_error", "denied", "not_run", "round")} == {
        "name": TOOL, "arguments": {"city": "Oslo"}, "result": "Sunny in Oslo, 21 °C.", "is_error": False,
        "denied": False, "not_run": False, "round": 1}
    assert (turn["answer"], turn["finish_reason"]) == ("It is sunny in Oslo.", "stop")
    assert turn["tool_rounds"] == 2 and turn["tool_note"] == ""
    assert turn["cached_tokens"] > 0  # the second round reused the first one's prompt
    assert f"[tool] {TOOL} → Sunny in Oslo, 21 °C. (" in out.stderr
    assert "stopped after" not in out.stderr
