"""`prefill chat --mcp CONFIG`: tools from MCP servers in the terminal chat.

The config's servers start on one `McpClient` (each server's state, and every entry the config
refused, printed on stderr); their tools are offered in every turn; the turn runs through the
tool loop (`session/tool_loop.py`, the one the window uses). Each call is shown by its name and
arguments and asked about on the terminal — y: run it, a: always run this tool, n (or nothing):
deny — unless --yes; then it is printed with a short result. Every name, argument and result
reaches the terminal through `terminal_text` (the answer's text too, in chat.py), so none can
move the cursor, retitle the window or hide what it says; the question is asked after a reset,
on a line of its own, and that last line names the real call.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from prefill.commands.errors import CliError
from prefill.commands.terminal_text import terminal_line
from prefill.engine.message import ToolCall
from prefill.engine.request import ChatRequest, Tool
from prefill.mcp_tools.client import McpClient
from prefill.mcp_tools.config_file import read_config
from prefill.mcp_tools.errors import McpConfigError
from prefill.mcp_tools.results import ToolResult
from prefill.mcp_tools.state import ServerState, ServerStatus
from prefill.mcp_tools.tool_runner import McpToolRunner
from prefill.session.tool_loop import (
    DEFAULT_MAX_ROUNDS,
    Decision,
    LoopEvent,
    LoopFinished,
    Streamer,
    ToolApprovals,
    ToolCallDone,
    ToolCallStarted,
    run_tool_loop,
)

SHORT_RESULT_CHARS = 160
RESET = "\x1b[0m"  # the program's own: every style and concealment off, before a question
ANSWERS = {"y": Decision.ALLOW_ONCE, "yes": Decision.ALLOW_ONCE, "a": Decision.ALWAYS_ALLOW,
           "always": Decision.ALWAYS_ALLOW}


def add_tool_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mcp", metavar="CONFIG", default="",
                   help="an mcp.json (the mcpServers shape): start its servers and offer their tools to the model")
    p.add_argument("--yes", action="store_true", help="with --mcp: run every tool call without asking")
    p.add_argument("--max-tool-rounds", metavar="N", type=int, default=None,
                   help=f"with --mcp: rounds of tool calls one turn may run (default: {DEFAULT_MAX_ROUNDS})")


def check_tool_options(args: argparse.Namespace) -> None:
    """Refuse the combinations that cannot work, before anything is loaded."""
    if not args.mcp:
        if args.yes or args.max_tool_rounds is not None:
            raise CliError("--yes and --max-tool-rounds go with --mcp")
        return
    if args.max_tool_rounds is not None and args.max_tool_rounds < 0:
        raise CliError("--max-tool-rounds: give 0 or more")
    if not args.yes and not args.prompt and not sys.stdin.isatty():
        raise CliError("tool calls are asked about on stdin, which brings the turns here: "
                       "add --yes, or give the turns with --prompt")


def one_line(text: str, limit: int = SHORT_RESULT_CHARS) -> str:
    flat = " ".join(text.split())
    return terminal_line(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def call_text(call: ToolCall) -> str:
    """A call as a person reads it: its name and arguments, as the model wrote them, on one line."""
    return f"{terminal_line(call.name)} {terminal_line(call.arguments)}"


def question(call: ToolCall) -> str:
    """The line that asks about `call`: the real call is on it, so the last line before the answer
    names what a y runs."""
    return f"[tool] run {call_text(call)}? [y]es, [a]lways this tool, [N]o: "


class TerminalTools:
    """The MCP tools of one `prefill chat`: the MCP client, the approvals, and what is printed of each call.

    Args:
        client: The servers, started.
        assume_yes: Run every call without asking (--yes).
        max_rounds: Rounds of calls one turn may run.
        out: Where calls, prompts and results are shown (stderr: stdout holds the answers).
        read_line: Reads the person's answer to a prompt; EOFError (the input ended) denies.
    """

    def __init__(self, client: McpClient, assume_yes: bool = False, max_rounds: int = DEFAULT_MAX_ROUNDS,
                 out: TextIO = sys.stderr, read_line: Callable[[], str] = input) -> None:
        self.client = client
        self.assume_yes = assume_yes
        self.max_rounds = max_rounds
        self.out = out
        self.read_line = read_line
        self.approvals = ToolApprovals()
        self.last: LoopFinished | None = None  # the last turn's end, for its JSON line
        self._asked = ""  # the id of the call just asked about (shown once, not again as it starts)

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The tools to offer: every ready server's, by their model-facing names."""
        return tuple(Tool(t.model_name, t.description, t.input_schema) for t in self.client.tools())

    def say(self, text: str) -> None:
        print(terminal_line(text), file=self.out, flush=True)

    def approve(self, call: ToolCall, cancel: threading.Event | None = None) -> Decision:
        """Ask on the terminal; Ctrl-C while asked stops the answer (sets `cancel`) and denies."""
        if self.assume_yes:
            return Decision.ALLOW_ONCE
        self._asked = call.id
        try:
            with _ctrl_c_interrupts():  # before the question is shown, so no Ctrl-C falls between
                if cancel is not None and cancel.is_set():  # Stop came while the answer ended
                    return Decision.DENY
                # Asked last, on a clean line: a reset first (on a terminal), so nothing printed
                # before can restyle or hide it, then the real call on the line the cursor waits on.
                reset = RESET if _is_terminal(self.out) else ""
                print(f"{reset}\n{question(call)}", end="", file=self.out, flush=True)
                answer = self.read_line()
        except EOFError:
            self.say("(no answer: denied)")
            return Decision.DENY
        except KeyboardInterrupt:
            self.say("")
            if cancel is not None:
                cancel.set()
            return Decision.DENY
        _forget_typed(answer)
        return ANSWERS.get(answer.strip().lower(), Decision.DENY)

    def loop(self, stream: Streamer, request: ChatRequest, cancel: threading.Event | None) -> Iterator[LoopEvent]:
        """One turn through the tool loop, the tools offered, each call asked about (unless --yes)."""
        return run_tool_loop(stream, replace(request, tools=self.tools), self.runner(),
                             functools.partial(self.approve, cancel=cancel), self.max_rounds, cancel, self.approvals)

    def runner(self) -> McpToolRunner:
        """What runs a call: the tool of that name on its server, approved by its key."""
        return McpToolRunner(lambda: self.client)

    def run_tool(self, call: ToolCall, cancel: threading.Event | None = None) -> ToolResult:
        return self.client.run_call(call, cancel)

    def show(self, ev: LoopEvent) -> None:
        """Print what the loop did: a call starting, its result, why the turn stopped."""
        if isinstance(ev, ToolCallStarted):
            if ev.call.id != self._asked:
                self.say(f"[tool] {call_text(ev.call)}")
        elif isinstance(ev, ToolCallDone):
            if ev.denied:
                said = "denied"
            elif ev.not_run:
                said = one_line(ev.text)
            else:
                said = f"{'error: ' if ev.is_error else ''}{one_line(ev.text)} ({ev.elapsed_s * 1000:.0f} ms)"
            self.say(f"[tool] {terminal_line(ev.call.name)} → {said}")
        elif isinstance(ev, LoopFinished):
            self.last = ev
            if ev.note:
                self.say(f"({ev.note})")

    def close(self) -> None:
        self.client.close()


def open_tools(args: argparse.Namespace, out: TextIO = sys.stderr) -> TerminalTools | None:
    """Start the servers --mcp names (None without --mcp), printing each one's state.

    Raises:
        CliError: the config file is missing, unreadable or not the mcpServers shape.
    """
    if not args.mcp:
        return None
    path = Path(args.mcp).expanduser()
    if not path.is_file():
        raise CliError(f"--mcp: there is no file {path}")
    try:
        config = read_config(path)
    except McpConfigError as e:
        raise CliError(str(e)) from e
    for problem in config.problems:
        print(f"prefill: {terminal_line(problem.message)}", file=out)
    client = McpClient()
    rounds = DEFAULT_MAX_ROUNDS if args.max_tool_rounds is None else args.max_tool_rounds
    tools = TerminalTools(client, args.yes, rounds, out)
    try:
        for server in config.servers:
            for line in server_lines(client.start(server)):
                print(f"prefill: {line}", file=out, flush=True)
    except BaseException:
        client.close()
        raise
    if not tools.tools:
        print("prefill: no MCP tool is ready: the model is offered none", file=out, flush=True)
    return tools


def server_lines(state: ServerState) -> list[str]:
    """A server's state as a person reads it: ready with its tools (and any notes), or why not."""
    head = f"MCP server '{terminal_line(state.name)}'"
    if state.status is ServerStatus.READY:
        names = terminal_line(", ".join(t.model_name for t in state.tools))
        count = f"{len(state.tools)} tool{'' if len(state.tools) == 1 else 's'}"
        return [f"{head}: ready, {count}{': ' + names if names else ''}",
                *(f"{head}: {terminal_line(note)}" for note in state.notes)]
    return [f"{head}: {state.status.value}. {terminal_line(state.reason)}".rstrip(". ") + "."]


def tool_calls_json(end: LoopFinished | None) -> dict[str, object]:
    """A turn's calls, rounds and Prefill's overhead between rounds, for its --json line."""
    if end is None:
        return {"tool_calls": [], "tool_rounds": 0, "tool_note": "", "overhead_ms": []}
    calls = [{
        "name": c.call.name, "arguments": c.call.arguments_object(), "result": c.text, "is_error": c.is_error,
        "elapsed_ms": round(c.elapsed_s * 1000, 1), "denied": c.denied, "not_run": c.not_run, "round": c.round,
    } for c in end.calls]
    return {"tool_calls": calls, "tool_rounds": end.rounds, "tool_note": end.note,
            "overhead_ms": [round(s * 1000, 3) for s in end.overheads_s]}


def _is_terminal(out: TextIO) -> bool:
    isatty = getattr(out, "isatty", None)
    return bool(isatty is not None and isatty())


@contextlib.contextmanager
def _ctrl_c_interrupts() -> Iterator[None]:
    """While a prompt waits, Ctrl-C raises KeyboardInterrupt (the chat's own handler only sets its
    event, which a blocked read would not notice); on the main thread only, where signals go."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def _forget_typed(answer: str) -> None:
    """Keep a y/n answer out of the chat's line history (readline adds every line input() reads)."""
    readline = sys.modules.get("readline")
    if readline is None or not answer.strip():
        return
    n = readline.get_current_history_length()
    if n and readline.get_history_item(n) == answer:
        readline.remove_history_item(n - 1)
