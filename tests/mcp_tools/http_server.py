"""An MCP server over streamable HTTP on 127.0.0.1, for the client's tests: `python http_server.py PORT`.

Tools: add, and whoami (says back the Authorization header the client sent).
"""

from __future__ import annotations

import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("test-http", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def whoami(ctx: Context) -> str:
    """Say back the Authorization header of the request."""
    headers = ctx.headers or {}
    return headers.get("authorization", "(none)")


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")
