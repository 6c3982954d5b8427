"""`prefill chat --mcp CONFIG`: the config's servers start, their tools are offered, each call is
asked about on the terminal (or run with --yes), printed, and listed in the --json line with its
result. A scripted model calls the SDK server's weather tool on every turn, so --max-tool-rounds
ends each turn."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.engine.vocab_models import write_caller

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SMALL = ["--ctx", "1024", "--temperature", "0", "--gpu-layers", "none", "--threads", "1"]
ASK = ["--prompt", "What is the weather in Oslo?"]
TOOL = "forecast__weather"  # the tool `weather` of the server called "forecast", as the model is offered it


@pytest.fixture(scope="module")
def caller(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scripted caller of tests/engine/vocab_models.py, calling the weather tool by the name the
    hub gives it: forecast__weather(city="Oslo"), on every turn."""
    return write_caller(tmp_path_factory.mktemp("caller") / "caller.gguf", ("forecast", "__", "weather"))


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two SDK stdio servers (the MCP tests' own, and the weather one) and an entry that is refused."""
    servers = {
        "tools": {"command": sys.executable, "args": [str(ROOT / "tests" / "mcp_tools" / "stdio_server.py")]},
        "forecast": {"command": sys.executable, "args": [str(HERE / "weather_mcp_server.py")]},
        "broken": {"command": 5},
    }
    path = tmp_path_factory.mktemp("mcp") / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def prefill(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    return subprocess.run([sys.executable, "-m", "prefill", "chat", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def one_turn(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1, out.stdout
    turn: dict[str, Any] = json.loads(lines[0])
    return turn


def test_with_yes_the_call_runs_and_the_json_has_it_with_its_result(tmp_path: Path, caller: Path, config: Path) -> None:
    out = prefill(tmp_path, "--model", str(caller), "--mcp", str(config), "--yes", "--json",
                  "--max-tool-rounds", "1", *ASK, *SMALL)
    turn = one_turn(out)
    ran, past_limit = turn["tool_calls"]
    assert ran == {"name": TOOL, "arguments": {"city": "Oslo"}, "result": "Sunny in Oslo, 21 °C.", "is_error": False,
                   "elapsed_ms": ran["elapsed_ms"], "denied": False, "not_run": False, "round": 1}
    assert 0 < ran["elapsed_ms"] < 30_000
    assert past_limit["not_run"] and past_limit["round"] == 2 and past_limit["result"].startswith("Not run:")
    assert turn["tool_rounds"] == 2 and turn["finish_reason"] == "tool_calls"
    assert turn["tool_note"] == "stopped after 1 tool round: the model asked for more calls, which were not run"
    (overhead,) = turn["overhead_ms"]
    assert 0 <= overhead < 1000
    assert turn["cached_tokens"] > 0  # the second round reused the first one's prompt
    err = out.stderr
    assert "prefill: MCP server \"broken\"" in err  # the refused entry, worded, and the others still start
    assert re.search(r"prefill: MCP server 'tools': ready, \d+ tools: tools__add, tools__echo", err)
    assert f"prefill: MCP server 'forecast': ready, 1 tool: {TOOL}" in err
    assert f'[tool] {TOOL} {{"city":"Oslo"}}\n[tool] {TOOL} → Sunny in Oslo, 21 °C. (' in err
    assert "[N]o: " not in err
    assert "(stopped after 1 tool round: " in err


def test_a_call_answered_n_is_denied(tmp_path: Path, caller: Path, config: Path) -> None:
    out = prefill(tmp_path, "--model", str(caller), "--mcp", str(config), "--json", "--max-tool-rounds", "1",
                  *ASK, *SMALL, stdin="n\n")
    turn = one_turn(out)
    denied = turn["tool_calls"][0]
    assert denied["denied"] and denied["is_error"] and denied["elapsed_ms"] == 0
    assert denied["result"] == f"The user denied this call: {TOOL} was not run."
    # the question names the real call, on a line of its own (the answer is the person's: not echoed here)
    assert f'\n\n[tool] run {TOOL} {{"city":"Oslo"}}? [y]es, [a]lways this tool, [N]o: [tool] {TOOL} → denied' \
        in out.stderr
    assert out.stderr.count("[N]o: ") == 1  # round 2's call is past the limit: not asked about


def test_always_asks_once_and_the_input_ending_denies(tmp_path: Path, caller: Path, config: Path) -> None:
    out = prefill(tmp_path, "--model", str(caller), "--mcp", str(config), "--json", "--max-tool-rounds", "2",
                  *ASK, "--prompt", "And tomorrow?", *SMALL, stdin="a\n")
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == 0 and len(lines) == 2, out.stderr
    for turn in lines:  # "always" holds for the rest of the chat, not just the turn
        assert [c["result"] for c in turn["tool_calls"][:2]] == ["Sunny in Oslo, 21 °C."] * 2
    assert out.stderr.count("[N]o: ") == 1


def test_no_answer_denies(tmp_path: Path, caller: Path, config: Path) -> None:
    out = prefill(tmp_path, "--model", str(caller), "--mcp", str(config), "--json", "--max-tool-rounds", "1",
                  *ASK, *SMALL, stdin="")
    turn = one_turn(out)
    assert turn["tool_calls"][0]["denied"]
    assert "(no answer: denied)" in out.stderr


@pytest.mark.parametrize(("args", "stdin", "said"), [
    (["--yes"], "", "--yes and --max-tool-rounds go with --mcp"),
    (["--mcp", "{config}", "--max-tool-rounds", "-1"], "", "--max-tool-rounds: give 0 or more"),
    (["--mcp", "{config}"], "Hi\n", "add --yes, or give the turns with --prompt"),
    (["--mcp", "{missing}", "--yes", *ASK], "", "--mcp: there is no file"),
])
def test_options_that_cannot_work_are_refused(tmp_path: Path, caller: Path, config: Path, args: list[str],
                                              stdin: str, said: str) -> None:
    args = [a.format(config=config, missing=tmp_path / "nope.json") for a in args]
    out = prefill(tmp_path, "--model", str(caller), *args, *SMALL, stdin=stdin)
    assert out.returncode == 1 and said in out.stderr and not out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pty and GNU readline")
def test_on_a_terminal_ctrl_c_at_the_question_stops_the_turn(tmp_path: Path, caller: Path, config: Path) -> None:
    from tests.commands.test_chat_terminal import Terminal

    t = Terminal(tmp_path, "--model", str(caller), "--mcp", str(config), "--max-tool-rounds", "2", *SMALL)
    try:
        t.wait_for(r">>> ")
        t.type("Weather?\r")
        # after a reset, on a line of its own, the real call
        t.wait_for(rf'\x1b\[0m\r\n\[tool\] run {TOOL} \{{"city":"Oslo"\}}\? \[y\]es, \[a\]lways this tool, \[N\]o: ')
        t.type("y\r")
        t.wait_for(rf"{TOOL} → Sunny in Oslo, 21 °C\. \(\d+ ms\)")
        t.wait_for(r"\[N\]o: ")
        t.type("\x03")  # Ctrl-C at the question: denied, and the turn stops
        t.wait_for(rf"{TOOL} → Not run: the user stopped the answer\.")
        t.wait_for(r"\[tool_calls\] prompt \d+ tok")
        t.wait_for(r">>> ")
        t.type("\x1b[A")  # Up: the message typed before, not the y typed to the question
        t.wait_for(r"Weather\?")
        t.type("\r")
        t.wait_for(r"\[N\]o: ")
        t.type("a\r")  # always: round 2's call is not asked about
        sunny = rf"{TOOL} → Sunny in Oslo"
        both = t.wait_for(rf"{sunny}[\s\S]*?{sunny}[\s\S]*?\(stopped after 2 tool rounds: ")
        assert "[N]o: " not in both.group()
        t.wait_for(r">>> ")
        t.type("/bye\r")
        assert t.close() == 0
    finally:
        if t.proc.poll() is None:
            t.proc.kill()
            t.proc.wait()
