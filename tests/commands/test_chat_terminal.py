"""`prefill chat` as people use `ollama run` and `llama-cli`: slash commands, line editing and
history on a real terminal (a pty), Ctrl-C stopping an answer; `--model bundled` everywhere.
The real bundled SmolLM2 answers."""

from __future__ import annotations

import io
import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prefill.commands.chat_repl import TerminalInput

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--ctx", "1024", "--temperature", "0", "--gpu-layers", "none", "--threads", "1"]
METRICS = re.compile(r"\[(stop|length|cancelled)\] prompt (\d+) tok")


def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "app"), XDG_DATA_HOME=str(tmp_path / "data"),
                XDG_CONFIG_HOME=str(tmp_path / "config"), TERM="xterm")


def prefill(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prefill", *args], input=stdin, capture_output=True, text=True,
                          env=env(tmp_path), timeout=300, check=False)


def test_piped_chat_obeys_the_slash_commands(tmp_path: Path) -> None:
    script = "Hi!\n/system You are a pirate.\n/system\n/help\n/nope\nWhat is 2+2?\n/clear\n//etc\n/bye\nnever sent\n"
    out = prefill(tmp_path, "chat", "--model", "bundled", "--json", "--max-tokens", "8", *SMALL, stdin=script)
    assert out.returncode == 0, out.stderr
    turns = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(turns) == 3  # commands are not sent to the model, and nothing after /bye
    assert turns[1]["prompt_tokens"] > turns[0]["prompt_tokens"]  # the pirate's turn kept the first one
    assert turns[2]["prompt_tokens"] < turns[1]["prompt_tokens"]  # /clear: a new conversation
    for said in ("(system prompt set)", "(system prompt: You are a pirate.)", "/clear", "/bye",
                 "(unknown command /nope; /help lists them)", "(new conversation)"):
        assert said in out.stderr, said


class Terminal:
    """`prefill chat` on a pseudo-terminal, as a person types into it."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        import pty

        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "prefill", "chat", *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env(tmp_path), preexec_fn=self._own_terminal)  # noqa: PLW1509 (no thread forks here)
        os.close(slave)
        self.seen = ""

    @staticmethod
    def _own_terminal() -> None:
        """In the child: a session of its own whose controlling terminal is the pty, so that
        Ctrl-C typed there sends it SIGINT."""
        import fcntl
        import termios

        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait_for(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        """Read until `pattern` appears after what was matched before."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.seen)
            if m:
                self.seen = self.seen[m.end():]
                return m
            left = deadline - time.monotonic()
            assert left > 0 and self.proc.poll() is None, f"no {pattern!r} in {self.seen[-2000:]!r}"
            if select.select([self.master], [], [], min(left, 1.0))[0]:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the child closed the terminal
                    pass

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=60)
        finally:
            os.close(self.master)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pty and GNU readline")
def test_terminal_chat_edits_lines_keeps_history_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    t = Terminal(tmp_path, "--model", "bundled", "--max-tokens", "300", *SMALL)
    try:
        t.wait_for(r"/help for the commands")
        t.wait_for(r">>> ")
        t.type("Say hx\x7fi\x01\x05 please.\r")  # backspace, then Ctrl-A / Ctrl-E (readline) move the cursor
        first = int(t.wait_for(METRICS.pattern).group(2))
        t.wait_for(r">>> ")
        t.type("\x1b[A\r")  # Up: the line before, sent again
        second = t.wait_for(METRICS.pattern)
        assert int(second.group(2)) > first  # the same question again, after the first answer
        t.wait_for(r">>> ")
        t.type("Write a very long story about a dragon.\r")
        t.wait_for(r"dragon\.\r?\n")  # the line as typed, echoed
        t.wait_for(r"\w+ \w+ \w+")  # the answer is streaming
        t.type("\x03")  # Ctrl-C: the answer stops, the chat goes on
        assert t.wait_for(METRICS.pattern).group(1) == "cancelled"
        t.wait_for(r">>> ")
        t.type("half a line")
        t.wait_for(r"half a line")
        # Ctrl-U (readline) drops the line. Ctrl-C at the prompt is tested on TerminalInput itself
        # (test_ctrl_c_at_the_prompt_drops_the_line_and_says_how_to_leave): CPython's readline sees a
        # SIGINT only when its wait for a key is interrupted, and one that lands between a key's echo
        # and the next wait waits for the next key, which a busy machine made happen here now and then.
        t.type("\x15/bye\r")
        assert t.close() == 0
    finally:
        if t.proc.poll() is None:
            t.proc.kill()
            t.close()
    history = (tmp_path / "data" / "prefill" / "chat-input-history").read_text().splitlines()
    # The edited line once (a repeat of the line before is not added again), and every later one.
    assert history == ["Say hi please.", "Write a very long story about a dragon.", "/bye"]


def test_model_bundled_is_accepted_by_every_command_that_loads_a_model(tmp_path: Path) -> None:
    chat = prefill(tmp_path, "chat", "--model", "bundled", "--prompt", "Hi", "--json", "--max-tokens", "4", *SMALL)
    assert chat.returncode == 0, chat.stderr
    assert json.loads(chat.stdout)["completion_tokens"] > 0
    bench = prefill(tmp_path, "bench", "--model", "bundled", "--prompt-tokens", "16", "--gen-tokens", "4",
                    "--reps", "1", "--gpu-layers", "none", "--threads", "1", "--json")
    assert bench.returncode == 0, bench.stderr
    assert json.loads(bench.stdout)["engine"]["gen_tokens"] > 0


def test_ctrl_c_at_the_prompt_drops_the_line_and_says_how_to_leave() -> None:
    out = io.StringIO()
    said = iter(["first half", KeyboardInterrupt(), "a question", "/bye"])

    def read(_prompt: str) -> str:
        item = next(said)
        if isinstance(item, BaseException):
            raise item
        return item

    terminal = TerminalInput(out=out, interactive=False)
    terminal._read = read  # type: ignore[method-assign]  # the keys a person types, Ctrl-C among them
    assert list(terminal) == ["first half", "a question"]
    assert "Ctrl-D or /bye to leave" in out.getvalue()
