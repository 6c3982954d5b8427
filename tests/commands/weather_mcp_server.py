"""An MCP server over stdio, written with the SDK, offering the one tool the scripted caller model
calls: weather(city). Run it as a script."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("test-weather", log_level="WARNING")


@server.tool()
def weather(city: str) -> str:
    """The weather in a city, today."""
    return f"Sunny in {city}, 21 °C."


if __name__ == "__main__":
    server.run("stdio")
