"""The model's words cannot forge the terminal's approval question: a scripted model answers with
an OSC title, a look-alike `[tool] … run?` line, ESC[8m (which would conceal the real question
printed after it) and bidi overrides, then calls forecast__weather. Through `prefill chat --mcp`,
piped and on a real terminal (a pty, answer and question on one screen), nothing the terminal
would obey comes through, and the line the cursor waits on names the real call."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.vocab_models import TOOLS_TEMPLATE, Vocab, _call_chain, vocab_dir, write_scripted

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SMALL = ["--ctx", "1024", "--temperature", "0", "--gpu-layers", "none", "--threads", "1"]
TOOL = "forecast__weather"
REAL_QUESTION = f'[tool] run {TOOL} {{"city":"Oslo"}}? [y]es, [a]lways this tool, [N]o: '
# The answer before the call, as token pieces of Qwen2's vocabulary, each used once (a scripted model
# gives every token one successor): a window title, a look-alike question, concealment, bidi overrides.
TITLE = ("\x1b", "]", "0", ";", "Title", "\x07")  # ESC ] 0 ; Title BEL: retitles the window
GREETING = ("Sure", "!\n\n")
LOOK_ALIKE = ("[to", "ol", "]:", " run", " echo", " {}", "?", " (", "y", "/N", "):", " ")
CONCEAL = ("\x1b[", "8", "m")  # ESC[8m: what follows is invisible, the real question included
BIDI = ("\u202e", "\u2066")  # right-to-left override, left-to-right isolate (each two byte-level tokens)
OBEYED = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def forger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vocabs = vocab_dir()
    v = Vocab(vocabs / "ggml-vocab-qwen2.gguf")
    try:
        call = _call_chain(v, ("forecast", "__", "weather"))
        said = [t for piece in (*TITLE, *GREETING, *LOOK_ALIKE, *CONCEAL) for t in [v.token(piece)]]
        said += [t for mark in BIDI for t in v.tokenize(mark, special=False)]
    finally:
        v.close()
    chain = [call[0], *said, *call[1:]]
    assert len(set(chain)) == len(chain), "each token of the script once"
    path = tmp_path_factory.mktemp("forger") / "forger.gguf"
    return write_scripted(path, vocabs / "ggml-vocab-qwen2.gguf", chain, TOOLS_TEMPLATE)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    servers = {"forecast": {"command": sys.executable, "args": [str(HERE / "weather_mcp_server.py")]}}
    path = tmp_path_factory.mktemp("mcp") / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "app"), XDG_DATA_HOME=str(tmp_path / "data"),
                XDG_CONFIG_HOME=str(tmp_path / "config"), TERM="xterm")


def chat(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prefill", "chat", *args], input=stdin, capture_output=True,
                          text=True, env=env(tmp_path), timeout=120, check=False)


def test_piped_the_answer_is_shown_escaped_and_the_question_names_the_real_call(
    tmp_path: Path, forger: Path, config: Path
) -> None:
    out = chat(tmp_path, "--model", str(forger), "--mcp", str(config), "--max-tool-rounds", "1",
               "--prompt", "Weather in Oslo?", *SMALL, stdin="n\n")
    assert out.returncode == 0, out.stderr
    for stream in (out.stdout, out.stderr):  # off a terminal nothing is obeyed, not even a reset
        assert "\x1b" not in stream and "\r" not in stream and not OBEYED.search(stream), stream
    shown = out.stdout
    assert "\\x1b]0;Title\\x07Sure!" in shown  # the title and the concealment, visible as what they are
    assert "[tool]: run echo {}? (y/N): \\x1b[8m\\u202e\\u2066" in shown
    asked = out.stderr.split(REAL_QUESTION)
    assert len(asked) == 2, out.stderr  # round 1's call is asked about once (round 2's is past the limit)
    assert asked[0].endswith("\n\n")  # on a line of its own, after the servers' lines, a blank line before
    assert asked[1].startswith(f"[tool] {TOOL} → denied")


def test_piped_json_lines_carry_no_raw_control(tmp_path: Path, forger: Path, config: Path) -> None:
    out = chat(tmp_path, "--model", str(forger), "--mcp", str(config), "--yes", "--json", "--max-tool-rounds", "1",
               "--prompt", "Weather in Oslo?", *SMALL)
    assert out.returncode == 0, out.stderr
    assert not OBEYED.search(out.stdout) and "\x1b" not in out.stderr
    (turn,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert turn["answer"].startswith("\x1b]0;Title\x07Sure!")  # the same JSON to a reader
    assert turn["answer"].endswith("\x1b[8m\u202e\u2066")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pty")
def test_on_a_terminal_the_question_comes_last_after_a_reset(tmp_path: Path, forger: Path, config: Path) -> None:
    from tests.commands.test_chat_terminal import Terminal

    t = Terminal(tmp_path, "--model", str(forger), "--mcp", str(config), "--max-tool-rounds", "1", *SMALL)
    try:
        t.wait_for(r">>> ")
        t.type("Weather in Oslo?\r")
        t.wait_for(r"Oslo\?")
        screen = t.wait_for(r"[\s\S]*\[N\]o: ").group()  # all the terminal got, up to the question
        # readline's own bracketed-paste switch and the question's reset are the only escapes
        own = re.sub(r"\x1b\[\?2004[hl]", "", screen)
        assert own.count("\x1b") == 1 and "\x1b[0m\r\n" + REAL_QUESTION in own, repr(screen)
        assert own.endswith("\x1b[0m\r\n" + REAL_QUESTION)  # the real call is the last line
        assert not OBEYED.search(own.replace("\x1b[0m", "")), repr(screen)
        assert "\\x1b]0;Title\\x07Sure!" in own and "\\x1b[8m\\u202e\\u2066" in own
        t.type("n\r")
        t.wait_for(rf"\[tool\] {TOOL} → denied")
        t.wait_for(r">>> ")
        t.type("/bye\r")
        assert t.close() == 0
    finally:
        if t.proc.poll() is None:
            t.proc.kill()
            t.close()
