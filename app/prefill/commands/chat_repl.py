"""The terminal chat's input: line editing and history (readline), and the slash commands people
know from `ollama run` and `llama-cli`: /help, /clear, /system TEXT, /bye, /compact, /model NAME
and /models."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Self, TextIO

from prefill.commands.terminal_text import terminal_text

HELP = """\
  /help          this list
  /clear         start a new conversation (the system prompt stays)
  /system TEXT   set the system prompt (/system alone shows it)
  /compact       have the model summarise the chat so far, and go on from the summary
  /model NAME    go on with another model (a name `prefill ls` gives, a .gguf path, or bundled);
                 the one left stays in memory while there is room (/model alone: the one in use)
  /models        the models in memory and what they take
  /bye           leave (also /exit, /quit or Ctrl-D)
  A line that ends with \\ goes on on the next one; // at the start sends one /.
  Ctrl-C stops an answer; the arrow keys edit the line and go through earlier ones."""
HISTORY_LENGTH = 1000
LEAVE = ("/bye", "/exit", "/quit")


@dataclass(frozen=True)
class NewConversation:
    """/clear: forget the turns so far."""


@dataclass(frozen=True)
class SetSystem:
    """/system TEXT: the system prompt from now on ("" for none)."""

    text: str


@dataclass(frozen=True)
class Compact:
    """/compact: the model summarises the chat so far; it goes on from the summary."""


@dataclass(frozen=True)
class SwitchModel:
    """/model NAME: the chat goes on with that model ("" asks which one answers)."""

    name: str


@dataclass(frozen=True)
class ListModels:
    """/models: the models in memory."""


Control = NewConversation | SetSystem | Compact | SwitchModel | ListModels


def input_history_file() -> Path:
    """Lines typed in `prefill chat`, kept between runs (as ~/.ollama/history is)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("prefill", appauthor=False)) / "chat-input-history"


class TerminalInput:
    """The user's turns and commands, read a line at a time.

    On a terminal, `input()` gets readline's editing and a history file; from a pipe the lines are
    read as they come, with no prompt. Commands are answered on `out` (stderr), so stdout holds
    the answers alone.
    """

    def __init__(self, system: str = "", out: TextIO = sys.stderr, interactive: bool | None = None,
                 history_file: Path | None = None) -> None:
        self.system = system
        self.out = out
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.history_file = history_file
        self._readline: ModuleType | None = None
        if self.interactive:
            self._start_readline()

    def _start_readline(self) -> None:
        try:
            import readline  # line editing for input(); absent on Windows
        except ImportError:
            return
        self._readline = readline
        self.history_file = self.history_file or input_history_file()
        readline.set_history_length(HISTORY_LENGTH)
        try:
            readline.read_history_file(self.history_file)
        except OSError:  # the first run, or an unreadable file: start empty
            pass

    def _save_history(self) -> None:
        if self._readline is None or self.history_file is None:
            return
        try:
            self.history_file.parent.mkdir(parents=True, exist_ok=True)
            self._readline.write_history_file(self.history_file)
        except OSError as e:
            self.say(f"(the input history was not saved: {e})")

    def say(self, text: str) -> None:
        print(terminal_text(text), file=self.out, flush=True)

    def _read(self, prompt: str) -> str:
        return input(prompt if self.interactive else "")

    def _line(self) -> str | None:
        """One message (continued over lines ending in a backslash); None at the end of input."""
        parts: list[str] = []
        prompt = ">>> "
        while True:
            try:
                line = self._read(prompt)
            except EOFError:
                return None if not parts else "\n".join(parts)
            except KeyboardInterrupt:  # at the prompt, as ollama: drop the line, say how to leave
                self.say("\n(Ctrl-D or /bye to leave)")
                parts, prompt = [], ">>> "
                continue
            if line.endswith("\\"):
                parts.append(line[:-1])
                prompt = "... "
                continue
            parts.append(line)
            return "\n".join(parts)

    def __iter__(self) -> Iterator[str | Control]:
        if self.interactive:
            self.say("Type a message; /help for the commands, /bye to leave.")
        try:
            while (line := self._line()) is not None:
                if line.strip().partition(" ")[0] in LEAVE:
                    return
                item = self._command(line)
                if item is not None:
                    yield item
        finally:
            self._save_history()

    def _command(self, line: str) -> str | Control | None:
        """What a line asks: a message, a control item, or None (answered here)."""
        text = line.strip()
        if not text:
            return None
        if text.startswith("//"):
            return text[1:]
        if not text.startswith("/"):
            return line
        name, _, arg = text.partition(" ")
        if name in ("/help", "/?"):
            self.say(HELP)
            return None
        if name == "/clear":
            self.say("(new conversation)")
            return NewConversation()
        if name == "/compact":
            return Compact()
        if name == "/model":
            return SwitchModel(arg.strip())
        if name == "/models":
            return ListModels()
        if name == "/system":
            if not arg.strip():
                self.say(f"(system prompt: {self.system})" if self.system else "(no system prompt)")
                return None
            self.system = arg.strip()
            self.say("(system prompt set)")
            return SetSystem(self.system)
        self.say(f"(unknown command {name}; /help lists them)")
        return None


class StopOnCtrlC:
    """While an answer streams, Ctrl-C sets `cancel` (the answer ends after its current token)
    instead of ending the program. Only on the main thread, where Python handles signals."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self._previous: object = None

    def _on_sigint(self, _signum: int, _frame: FrameType | None) -> None:
        self.cancel.set()

    def __enter__(self) -> Self:
        self.cancel.clear()
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]
            self._previous = None
