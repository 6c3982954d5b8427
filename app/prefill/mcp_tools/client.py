"""`McpClient`: the app's MCP servers behind a blocking, thread-safe API, on one event loop of its own.

The window calls it from worker threads, the terminal from its main thread; neither runs an event
loop for it. One daemon thread runs one asyncio loop; each server is one task there
(`ServerConnection.run`), each call another. Every method returns within a bound:

- `start` waits for the connection, the handshake and the tool list up to the start timeout;
  a command that is missing, exits or hangs gives a failed state with its reason.
- `call` (and `run_keyed`) waits up to its timeout (plus a few seconds for the server to show it
  still answers); setting `cancel` ends the wait within `POLL_S` and tells the server to stop.
- `stop` and `close` wait for the sessions to end, which for a stdio server means its process
  is gone (the SDK closes its stdin, then sends SIGTERM, then SIGKILL, each after a bounded wait).

Failures come back as values, already worded: a failed `ServerState`, an `is_error` `ToolResult`.

A tool's model-facing name, once given, stays its own for the MCP client's life: a server that stops
keeps its names, so another server's tool never takes one over. What the tool loop approves and
runs is a `ToolKey` (the server's entry and the tool), looked up once from the name
(`tool_key`); `run_keyed` runs that tool or refuses, never whatever the name means by then.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from prefill.engine.message import ToolCall
from prefill.mcp_tools import wording
from prefill.mcp_tools.config import McpServer
from prefill.mcp_tools.connection import PROBE_TIMEOUT_S, ServerConnection
from prefill.mcp_tools.names import model_name
from prefill.mcp_tools.results import DEFAULT_BUDGET_BYTES, ToolResult, cut_to_budget
from prefill.mcp_tools.sdk_logs import quiet_sdk_logs
from prefill.mcp_tools.state import McpTool, ServerState, ServerStatus, ToolKey

log = logging.getLogger(__name__)

DEFAULT_START_TIMEOUT_S = 30.0  # `npx -y` or `uvx` may download the server on its first start
DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_CLOSE_TIMEOUT_S = 8.0  # the SDK's stdio shutdown takes at most about 6.5 s, usually milliseconds
POLL_S = 0.05  # how often a call waiting on its answer looks at `cancel`
_MARGIN_S = 2.0  # beyond a limit the loop enforces, before the waiting thread gives up on the loop itself


class McpClient:
    """The app's MCP servers: start, list tools, call, stop. Thread-safe; build one at start-up.

    Args:
        start_timeout_s: Default limit for one server's start (connect, handshake, tool list).
        result_budget_bytes: A tool's answer past this many bytes of UTF-8 is cut, with a note.
        close_timeout_s: How long `stop` and `close` wait for sessions (and processes) to end.
    """

    def __init__(self, *, start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
                 result_budget_bytes: int = DEFAULT_BUDGET_BYTES, close_timeout_s: float = DEFAULT_CLOSE_TIMEOUT_S):
        self.start_timeout_s = start_timeout_s
        self.result_budget_bytes = result_budget_bytes
        self.close_timeout_s = close_timeout_s
        self._lock = threading.Lock()
        self._conns: dict[str, ServerConnection] = {}
        self._states: dict[str, ServerState] = {}  # by name, in the order first started: names follow it
        self._by_model_name: dict[str, McpTool] = {}
        self._keys: dict[str, ToolKey] = {}  # by model-facing name, for the tools of ready servers
        self._names: dict[tuple[str, str], str] = {}  # (server, tool) -> the name it was given, for good
        self._taken: set[str] = set()  # every name given, lower-cased
        self._closed = False
        quiet_sdk_logs()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._thread.start()

    def __enter__(self) -> McpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- servers

    def start(self, server: McpServer, timeout_s: float | None = None) -> ServerState:
        """Start `server` (stopping one of the same name first) and wait until it is ready or failed.

        Args:
            server: The entry from mcp.json.
            timeout_s: The limit for this start; the MCP client's `start_timeout_s` when None.

        Returns:
            Its state: ready with its tools, or failed with the reason (never raises for the server's faults).
        """
        timeout = self.start_timeout_s if timeout_s is None else timeout_s
        if self._closed:
            return ServerState(server.name, ServerStatus.FAILED, reason=wording.hub_closed())
        if server.name in self._conns:
            self.stop(server.name)
        if server.disabled:
            state = ServerState(server.name, ServerStatus.STOPPED,
                                reason=f"MCP server '{server.name}' is turned off in mcp.json (\"disabled\": true).")
            with self._lock:
                self._states[server.name] = state
                self._rename()
            return state
        conn = ServerConnection(server, timeout, self._on_state)
        with self._lock:
            self._conns[server.name] = conn
            self._states[server.name] = conn.state
        asyncio.run_coroutine_threadsafe(conn.run(), self._loop)
        if not conn.settled.wait(timeout + _MARGIN_S):  # the loop enforces the timeout; this is a backstop
            self._loop.call_soon_threadsafe(conn.request_stop)
            return ServerState(server.name, ServerStatus.FAILED,
                               reason=wording.start_timed_out(server, timeout))
        return self.state(server.name) or conn.state

    def stop(self, name: str) -> ServerState:
        """Stop the server called `name` and wait (up to `close_timeout_s`) until its session and process end."""
        with self._lock:
            conn = self._conns.get(name)
        if conn is None:
            return self.state(name) or ServerState(name, ServerStatus.STOPPED)
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(conn.request_stop)
        if not conn.finished.wait(self.close_timeout_s):
            log.warning("mcp: %s did not stop within %.0f s", name, self.close_timeout_s)
        with self._lock:
            if self._conns.get(name) is conn:
                del self._conns[name]
        return self.state(name) or conn.state

    def state(self, name: str) -> ServerState | None:
        """The last state of the server called `name` (None if it was never started)."""
        with self._lock:
            return self._states.get(name)

    def states(self) -> list[ServerState]:
        """Every server started so far, in the order first started."""
        with self._lock:
            return list(self._states.values())

    # ---- tools

    def tools(self) -> list[McpTool]:
        """Every tool of every ready server, each with its model-facing name."""
        with self._lock:
            return list(self._by_model_name.values())

    def find_tool(self, model_name: str) -> McpTool | None:
        """The tool a model called by its model-facing name (None if no ready server offers it)."""
        with self._lock:
            return self._by_model_name.get(model_name)

    def tool_key(self, model_name: str) -> ToolKey | None:
        """Which tool `model_name` names now: its server's entry and its own name (None if no ready server
        offers it). A name never comes to name another server's tool."""
        with self._lock:
            return self._keys.get(model_name)

    def call(self, server: str, tool: str, arguments: Mapping[str, Any], timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
             cancel: threading.Event | None = None, entry: McpServer | None = None) -> ToolResult:
        """Call `tool` on `server` and wait for its answer, cut to the result budget.

        Args:
            server: The server's name in mcp.json.
            tool: The tool's own name on that server (`McpTool.name`).
            arguments: A JSON object's worth of arguments.
            timeout_s: How long the tool may take; past it the call is abandoned (the server is
                told), and if the server then does not answer a quick check it is marked failed.
            cancel: Set it to stop waiting (within `POLL_S`); the server is told to stop the call.
            entry: Run it only if the server running as `server` was started from this entry (the
                one a `ToolKey` names): else it is refused, not run.

        Returns:
            The answer, or a worded error (`is_error`, and `stopped` when `cancel` ended it). Never raises.
        """
        began = time.monotonic()

        def failed(text: str, stopped: bool = False) -> ToolResult:
            return ToolResult(text, True, time.monotonic() - began, stopped=stopped)

        if self._closed:
            return failed(wording.hub_closed())
        with self._lock:
            conn = self._conns.get(server)
            state = self._states.get(server)
        if conn is None or state is None:
            status = state.status.value if state else ""
            return failed(wording.not_running(server, status, state.reason if state else ""))
        if entry is not None and conn.server != entry:
            return failed(wording.entry_changed(server, tool))
        try:
            args = _json_object(arguments)
        except ValueError as exc:
            return failed(wording.bad_arguments(tool, str(exc)))
        if cancel is not None and cancel.is_set():
            return failed(wording.call_stopped(tool), stopped=True)
        future = asyncio.run_coroutine_threadsafe(conn.call(tool, args, timeout_s), self._loop)
        outcome = _wait(future, began + timeout_s + PROBE_TIMEOUT_S + _MARGIN_S, cancel)
        if outcome == "stopped":
            return failed(wording.call_stopped(tool), stopped=True)
        if outcome == "late":
            return failed(wording.call_timed_out(server, tool, timeout_s, server_lost=False))
        try:
            text, is_error, answered = future.result()
        except concurrent.futures.CancelledError:  # the MCP client closed under it
            return failed(wording.call_during_stop(server, tool))
        except Exception as exc:  # a bug below; worded rather than raised into a worker thread
            log.exception("mcp: call %s/%s", server, tool)
            return failed(wording.call_failed(conn.server, tool, exc))
        text, cut = cut_to_budget(text, self.result_budget_bytes, answered)
        return ToolResult(text, is_error, time.monotonic() - began, cut_bytes=cut)

    def call_model_tool(self, model_name: str, arguments: Mapping[str, Any],
                        timeout_s: float = DEFAULT_CALL_TIMEOUT_S, cancel: threading.Event | None = None) -> ToolResult:
        """`call` for the tool a model named (its model-facing name)."""
        key = self.tool_key(model_name)
        if key is None:
            return ToolResult(f"There is no tool named '{model_name}'. Use one of the tools offered.", True, 0.0)
        return self.call(key.server.name, key.tool, arguments, timeout_s, cancel, entry=key.server)

    def run_call(self, call: ToolCall, cancel: threading.Event | None = None,
                 timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> ToolResult:
        """A call as the model wrote it (arguments as JSON text): arguments that are not a JSON object
        come back as a worded error result, like every other fault."""
        key = self.tool_key(call.name)
        if key is None:
            return ToolResult(f"There is no tool named '{call.name}'. Use one of the tools offered.", True, 0.0)
        return self.run_keyed(key, call, cancel, timeout_s)

    def run_keyed(self, key: ToolKey, call: ToolCall, cancel: threading.Event | None = None,
                  timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> ToolResult:
        """`call` (as the model wrote it) run as the tool `key` names, whatever `call.name` names by now:
        refused if that server is no longer the one running under its name."""
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            return ToolResult(wording.bad_arguments(call.name, "they are not JSON"), True, 0.0)
        if not isinstance(arguments, dict):
            return ToolResult(wording.bad_arguments(call.name, "they are not an object"), True, 0.0)
        return self.call(key.server.name, key.tool, arguments, timeout_s, cancel, entry=key.server)

    # ---- closing

    def close(self) -> None:
        """Stop every server and the loop; waits up to about `close_timeout_s`. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conns = list(self._conns.values())
        for conn in conns:
            self._loop.call_soon_threadsafe(conn.request_stop)
        deadline = time.monotonic() + self.close_timeout_s
        for conn in conns:
            if not conn.finished.wait(max(0.0, deadline - time.monotonic())):
                log.warning("mcp: %s did not stop within %.0f s", conn.server.name, self.close_timeout_s)
        try:
            asyncio.run_coroutine_threadsafe(_cancel_the_rest(), self._loop).result(_MARGIN_S)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_MARGIN_S)
        if not self._thread.is_alive():
            self._loop.close()

    # ---- inside

    def _on_state(self, conn: ServerConnection, state: ServerState) -> None:
        """A connection's new state (on the loop thread): kept unless a newer start replaced it."""
        with self._lock:
            if self._conns.get(state.name) not in (conn, None):  # an older start, replaced
                return
            self._states[state.name] = state
            self._rename()

    def _rename(self) -> None:
        """Give every ready server's tools their model-facing names (under the lock): the name a
        (server, tool) got first, or a new one no other tool ever had."""
        self._by_model_name = {}
        self._keys = {}
        for s in [s for s in self._states.values() if s.status is ServerStatus.READY]:
            conn = self._conns.get(s.name)
            tools = []
            for t in s.tools:
                name = self._names.get((s.name, t.name))
                if name is None:
                    name = self._names[(s.name, t.name)] = model_name(s.name, t.name, self._taken)
                tools.append(replace(t, model_name=name))
                if conn is not None:
                    self._keys[name] = ToolKey(conn.server, t.name)
            self._states[s.name] = replace(s, tools=tuple(tools))
            self._by_model_name.update((t.model_name, t) for t in tools)


def _wait(future: concurrent.futures.Future[Any], deadline: float, cancel: threading.Event | None) -> str:
    """Wait for `future`: "done", "stopped" (`cancel` was set) or "late" (past `deadline`); cancels it unless done."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    while True:
        left = deadline - time.monotonic()
        if done.wait(min(POLL_S, left) if cancel is not None else max(left, 0.0)):
            return "done"
        if cancel is not None and cancel.is_set():
            future.cancel()
            return "stopped"
        if time.monotonic() >= deadline:
            future.cancel()
            return "late"


def _json_object(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A private copy of `arguments` as plain JSON (so the loop shares nothing with the caller).

    Raises:
        ValueError: They are not a JSON object (worded as a clause).
    """
    if not isinstance(arguments, Mapping):
        raise ValueError(f"they are a {type(arguments).__name__}, not an object")
    try:
        copy = json.loads(json.dumps(arguments, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"they cannot be written as JSON ({exc})") from exc
    if not isinstance(copy, dict):
        raise ValueError("they are not an object")
    return copy


async def _cancel_the_rest() -> None:
    """Cancel every task left on the loop (calls still waiting) and let them finish."""
    me = asyncio.current_task()
    rest = [t for t in asyncio.all_tasks() if t is not me]
    for task in rest:
        task.cancel()
    if rest:
        await asyncio.wait(rest, timeout=1.0)
