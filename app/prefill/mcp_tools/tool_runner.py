"""`McpToolRunner`: the MCP client's tools as the tool loop runs them, known by key rather than by name.

It imports neither the MCP client nor the SDK (the window makes one on the GUI thread, where the SDK is
never imported); the MCP client comes from a callable at each use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from prefill.engine.message import ToolCall
from prefill.mcp_tools.state import ToolKey

if TYPE_CHECKING:
    from prefill.mcp_tools.client import McpClient
    from prefill.mcp_tools.results import ToolResult


class McpToolRunner:
    """A `session.tool_loop.KeyedRunner` over an `McpClient`: the loop looks a call's tool up once by the
    name the model wrote (`tool_key`: the server's entry and the tool), approves it as that tool, and
    runs it as that tool (`run_keyed`), whatever the name comes to mean meanwhile. Callable as a
    plain runner too (by name).

    Args:
        client: What gives the MCP client (`lambda: client`; the window makes its client on first use).
    """

    def __init__(self, client: Callable[[], McpClient]):
        self._client = client

    def __call__(self, call: ToolCall, cancel: threading.Event | None = None) -> ToolResult:
        return self._client().run_call(call, cancel)

    def tool_key(self, name: str) -> ToolKey | None:
        return self._client().tool_key(name)

    def run_keyed(self, key: Hashable, call: ToolCall, cancel: threading.Event | None = None) -> ToolResult:
        if not isinstance(key, ToolKey):  # not one of ours: no tool of the MCP client
            from prefill.mcp_tools.results import ToolResult

            return ToolResult(f"There is no tool named '{call.name}'. Use one of the tools offered.", True, 0.0)
        return self._client().run_keyed(key, call, cancel)
