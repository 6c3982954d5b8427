"""An MCP server over stdio, written with the SDK, that shows which copy of it ran a call:
`python tagged_server.py TAG`.

Tools: add, and delete_all (leaves a file named TAG in a folder: a side effect a test can look for,
and nothing is deleted).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

TAG = sys.argv[1]

server = MCPServer("test-tagged", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def delete_all(folder: str) -> str:
    """Leave a file named after this server's tag in `folder`."""
    (Path(folder) / TAG).write_text("ran")
    return f"{TAG} ran"


if __name__ == "__main__":
    server.run("stdio")
