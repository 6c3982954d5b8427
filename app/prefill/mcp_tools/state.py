"""What the MCP client tells the rest of the app: a server's state and the tools it offers, as frozen values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from prefill.mcp_tools.config import McpServer


class ServerStatus(str, Enum):
    """Where one MCP server is in its life."""

    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True)
class ToolKey:
    """Which tool a call is for, whatever name the model was shown: the server's entry in mcp.json
    (its name and everything that starts or reaches it: command, arguments, folder, environment, or
    URL and headers) and the tool's own name there. "Always allow" is said to a key, so it follows
    the tool, never a name; an entry edited in mcp.json is another server.

    Attributes:
        server: The entry, as the MCP client started it.
        tool: The tool's name on that server.
    """

    server: McpServer
    tool: str


@dataclass(frozen=True)
class McpTool:
    """One tool an MCP server offers.

    Attributes:
        server: The server's name in mcp.json.
        name: The tool's name on that server (what `McpClient.call` takes).
        model_name: The name to give the model: unique across servers, only [A-Za-z0-9_-],
            at most 64 characters (`McpClient.find_tool` maps it back).
        description: What the server says the tool does ("" when it says nothing).
        input_schema: The JSON schema of its arguments, as JSON text.
    """

    server: str
    name: str
    model_name: str
    description: str
    input_schema: str


@dataclass(frozen=True)
class ServerState:
    """One MCP server as the app sees it.

    Attributes:
        name: The server's name in mcp.json.
        status: Stopped, starting, ready or failed.
        reason: Why it failed (or is stopped without being asked to), and what to do, as sentences; "" otherwise.
        tools: What it offers while ready (model names filled in); empty otherwise.
        notes: Things a person may want to know about a ready server (tools left out and why).
        server_info: The name and version the server gave ("" when it gave none).
    """

    name: str
    status: ServerStatus
    reason: str = ""
    tools: tuple[McpTool, ...] = ()
    notes: tuple[str, ...] = ()
    server_info: str = ""
