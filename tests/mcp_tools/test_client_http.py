"""The MCP client against the SDK's streamable HTTP server under uvicorn: tools listed beside a stdio
server's (one name each), headers sent, and the ways an HTTP server fails."""

from __future__ import annotations

import socket

from prefill.mcp_tools.client import McpClient
from prefill.mcp_tools.config import HttpServer
from prefill.mcp_tools.state import ServerStatus

from .conftest import stdio_entry


def test_tools_of_both_servers_are_listed_with_unique_names(client: McpClient, http_url: str) -> None:
    web = client.start(HttpServer("tools", http_url, (("Authorization", "Bearer sekrit"),)))
    assert web.status is ServerStatus.READY and web.server_info == "test-http"
    assert client.start(stdio_entry("local")).status is ServerStatus.READY
    names = {(t.server, t.name): t.model_name for t in client.tools()}
    assert names[("tools", "add")] == "tools__add" and names[("local", "add")] == "local__add"
    assert names[("tools", "whoami")] == "tools__whoami" and len(names) == 9
    assert client.call_model_tool("tools__add", {"a": 20, "b": 22}).text == "42"
    assert client.call("local", "add", {"a": 1, "b": 1}).text == "2"
    assert client.call("tools", "whoami", {}).text == "Bearer sekrit"


def test_a_wrong_path_is_worded(client: McpClient, http_url: str) -> None:
    state = client.start(HttpServer("wrong", http_url.replace("/mcp", "/sse")))
    assert state.status is ServerStatus.FAILED
    assert "there is no MCP endpoint at http://127.0.0.1:" in state.reason and "(HTTP 404)" in state.reason
    assert "old SSE endpoint" in state.reason


def test_a_server_that_is_not_running_is_worded(client: McpClient) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        url = f"http://127.0.0.1:{s.getsockname()[1]}/mcp?key=sekrit"
        state = client.start(HttpServer("down", url))
    assert state.status is ServerStatus.FAILED
    assert "could not connect to http://127.0.0.1:" in state.reason and "is running" in state.reason
    assert "sekrit" not in state.reason
