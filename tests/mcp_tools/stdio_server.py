"""An MCP server over stdio, written with the SDK, for the client's tests: run it as a script.

Tools: add, echo, huge (10 MB of text, or as many characters as asked), slow (sleeps), freeze
(blocks the whole server), fail (raises), crash (the process exits mid-call). A server written
with the SDK cannot send garbage (it moves its wire off fd 1): raw_server.py does that.
"""

from __future__ import annotations

import os
import sys
import time

import anyio
from mcp.server.mcpserver import MCPServer

HUGE_CHARS = 10_000_000

server = MCPServer("test-stdio", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def huge(chars: int = HUGE_CHARS) -> str:
    """Answer ten million characters (or `chars`)."""
    return "0123456789" * (chars // 10)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds} s"


@server.tool()
async def freeze(seconds: float) -> str:
    """Block the server's own event loop: it answers nothing, not even a ping, until done."""
    time.sleep(seconds)
    return "thawed"


@server.tool()
def fail() -> str:
    """Always raise."""
    raise ValueError("the disk is on fire")


@server.tool()
def crash() -> str:
    """Exit the whole process in the middle of the call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
