"""Typed errors of the MCP tools package. They carry what a person needs; the edge words them.

A server that fails to start or a call that fails is not an exception here: the MCP client hands those
back as values (a failed `ServerState`, an `is_error` `ToolResult`) already worded.
"""

from __future__ import annotations

from pathlib import Path


class McpToolsError(Exception):
    """Base of every error the MCP tools package raises on purpose."""


class McpConfigError(McpToolsError):
    """mcp.json as a whole cannot be used: unreadable, not JSON, or not the `mcpServers` shape.

    One bad server entry is not this: it is an `EntryProblem`, and the other entries still load.

    Attributes:
        path: The file.
        reason: What is wrong with it, as a clause ("it is not valid JSON (…)").
    """

    def __init__(self, path: Path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"cannot use the MCP server list {path}: {reason}")
