"""An MCP server over stdio, written with the SDK, whose weather(city) tool takes a minute: for
Stop while a tool runs. Run it as a script."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("test-slow-weather", log_level="WARNING")


@server.tool()
async def weather(city: str) -> str:
    """The weather in a city, today (slowly)."""
    await anyio.sleep(60)
    return f"Sunny in {city}, 21 °C."


if __name__ == "__main__":
    server.run("stdio")
