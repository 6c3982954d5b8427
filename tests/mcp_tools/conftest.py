"""Real MCP servers for the client's tests: the SDK's stdio server as a script, its streamable HTTP
server under uvicorn on 127.0.0.1, and a hand-written one that misbehaves."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.mcp_tools.client import McpClient
from prefill.mcp_tools.config import StdioServer

HERE = Path(__file__).resolve().parent
START_S = 20.0  # generous: the SDK's servers take about half a second on an idle machine


def stdio_entry(name: str = "tools") -> StdioServer:
    """The SDK stdio server (stdio_server.py) as an mcp.json entry."""
    return StdioServer(name, sys.executable, (str(HERE / "stdio_server.py"),))


def raw_entry(name: str, mode: str) -> StdioServer:
    """The hand-written server (raw_server.py) in one of its modes."""
    return StdioServer(name, sys.executable, (str(HERE / "raw_server.py"), mode))


def children() -> set[int]:
    """The live (not zombie) processes whose parent is this one, read from /proc."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            out.add(int(stat.parent.name))
    return out


@pytest.fixture
def client() -> Iterator[McpClient]:
    h = McpClient(start_timeout_s=START_S)
    yield h
    h.close()


@pytest.fixture(scope="module")
def tools_hub() -> Iterator[McpClient]:
    """One client with the SDK stdio server started as "tools", shared by a module's tests."""
    h = McpClient(start_timeout_s=START_S)
    state = h.start(stdio_entry())
    assert state.status.value == "ready", state.reason
    yield h
    h.close()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The SDK's streamable HTTP server (http_server.py) under uvicorn on a free port: its /mcp URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(HERE / "http_server.py"), str(port)])
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "the HTTP test server exited"
                assert time.monotonic() < deadline, "the HTTP test server did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)
