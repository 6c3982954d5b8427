"""The app's MCP servers for the window: one `McpClient`, started, saved and closed off the GUI thread.

The MCP client (and the MCP SDK it imports) is made at the first start, on a pool thread. Reading
mcp.json, starting a server, saving the list and closing the MCP client are pool jobs whose results come
back by signal; the engine thread calls `run_tool` (a `McpToolRunner`, which runs a call as the tool
its name stood for) during a turn (the MCP client is thread-safe). The GUI thread keeps what it was told:
the config, each server's last state, and the tools, and decides which tools are offered (`off`:
the model-facing names the person turned off).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from prefill.engine.request import Tool
from prefill.mcp_tools.config import McpConfig, McpServer
from prefill.mcp_tools.state import McpTool, ServerState, ServerStatus
from prefill.mcp_tools.tool_runner import McpToolRunner
from prefill.ui.workers.pool_jobs import PoolJobs

if TYPE_CHECKING:
    from prefill.mcp_tools.client import McpClient

CLOSE_WAIT_MS = 10_000  # the MCP client's own close waits about 8 s at most for the slowest server


class McpServers(QObject):
    """The servers of mcp.json (or of `config_path`), as the window sees them.

    Signals:
        changed(): the config, a server's state or the tools changed (read `config`, `config_error`,
            `states`, `tools`).
    """

    changed = Signal()

    def __init__(self, config_path: Path | None = None, off: Iterable[str] = (), parent: QObject | None = None):
        super().__init__(parent)
        self.config_path = config_path
        self.jobs = PoolJobs(4, self)
        self._client: McpClient | None = None
        self._hub_lock = threading.Lock()
        self._closed = False
        self.config = McpConfig()
        self.config_error = ""  # why mcp.json could not be read ("" when it could)
        self.states: dict[str, ServerState] = {}
        self.tools: tuple[McpTool, ...] = ()
        self.off: set[str] = set(off)
        self._serial = 0  # the newest start_all: results of an older one are dropped
        # Runs a model's call on the engine thread, as the tool (server entry and tool) its name stood
        # for when the loop looked it up, so "always allow" stays with that tool; faults come back worded.
        self.run_tool = McpToolRunner(self.client)

    # --- on any thread ---------------------------------------------------------------------
    def client(self) -> McpClient:
        """The MCP client, made on first use (never on the GUI thread: it imports the MCP SDK)."""
        with self._hub_lock:
            if self._client is None:
                from prefill.mcp_tools.client import McpClient

                self._client = McpClient()
            return self._client

    # --- from the GUI thread ---------------------------------------------------------------------
    def offered(self) -> tuple[Tool, ...]:
        """The tools to offer the model in a turn: every ready server's, less those turned off."""
        return tuple(Tool(t.model_name, t.description, t.input_schema)
                     for t in self.tools if t.model_name not in self.off)

    def start_all(self) -> None:
        """Read mcp.json and (re)start each server in it, each on its own pool job."""
        if self._closed:
            return
        self._serial += 1
        serial = self._serial
        self.jobs.run(self._read, then=lambda config: self._on_read(serial, config), error=self._on_read_failed)

    def save(self, servers: list[McpServer], then: Callable[[], None] | None = None,
             error: Callable[[Exception], None] | None = None, removed: Iterable[str] = ()) -> None:
        """Write the list (0600, keeping the entries still refused unless `removed` or replaced), then
        start it again."""
        from prefill.mcp_tools.config import EntryProblem

        names = {s.name for s in servers} | set(removed)
        keep: list[EntryProblem] = [p for p in self.config.problems if p.name not in names]

        def write() -> None:
            from prefill.mcp_tools.config_file import save_config

            save_config(servers, self.config_path, keep)

        def saved(_none: object) -> None:
            self.start_all()
            if then is not None:
                then()

        self.jobs.run(write, then=saved, error=error)

    def close(self) -> None:
        """On quit: stop every server (their processes end) on a pool thread, and wait for it there."""
        self._closed = True

        def close_hub() -> None:
            with self._hub_lock:
                client = self._client
            if client is not None:
                client.close()

        # On a pool of its own: the servers' pool may be full of starts, and its close drops queued jobs.
        closer = PoolJobs(1, self)
        closer.run(close_hub)
        closer.close(CLOSE_WAIT_MS)
        self.jobs.close(CLOSE_WAIT_MS)  # the starts still running end once the MCP client is closed

    # --- jobs and their results ------------------------------------------------------------------
    def _read(self) -> McpConfig:
        from prefill.mcp_tools.config_file import read_config

        return read_config(self.config_path)

    def _on_read_failed(self, e: Exception) -> None:
        self.config_error = str(e)
        self.changed.emit()

    def _on_read(self, serial: int, config: McpConfig) -> None:
        if serial != self._serial or self._closed:
            return
        self.config, self.config_error = config, ""
        names = {s.name for s in config.servers}
        self.states = {s.name: ServerState(s.name, ServerStatus.STARTING) for s in config.servers}
        self.tools = tuple(t for t in self.tools if t.server in names)
        self.jobs.run(self._stop_others, names)
        for server in config.servers:
            self._start_one(serial, server)
        self.changed.emit()

    def _start_one(self, serial: int, server: McpServer) -> None:
        def started(got: tuple[ServerState, tuple[McpTool, ...]]) -> None:
            self._on_started(serial, got)

        def failed(e: Exception) -> None:
            self._on_start_failed(serial, server.name, e)

        self.jobs.run(self._start, server, then=started, error=failed)

    def _stop_others(self, keep: set[str]) -> None:
        with self._hub_lock:
            client = self._client
        if client is not None:
            for state in client.states():
                if state.name not in keep and state.status in (ServerStatus.READY, ServerStatus.STARTING):
                    client.stop(state.name)

    def _start(self, server: McpServer) -> tuple[ServerState, tuple[McpTool, ...]]:
        client = self.client()
        state = client.start(server)
        return state, tuple(client.tools())

    def _on_started(self, serial: int, got: tuple[ServerState, tuple[McpTool, ...]]) -> None:
        if serial != self._serial or self._closed:
            return
        state, tools = got
        self.states[state.name] = state
        self.tools = tuple(t for t in tools if t.server in self.states)
        self.changed.emit()

    def _on_start_failed(self, serial: int, name: str, e: Exception) -> None:
        if serial == self._serial:
            self.states[name] = ServerState(name, ServerStatus.FAILED, reason=str(e))
            self.changed.emit()
