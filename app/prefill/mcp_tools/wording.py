"""Every sentence the MCP client hands back: why a server failed, why a call did. What failed, then what to do.

The MCP client returns failures as values (a failed `ServerState`, an `is_error` `ToolResult`), so they
are worded here, once, for the person reading the server list and for the model reading a result.
Nothing here quotes a header, an env value or a URL's query.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from prefill.mcp_tools.config import HttpServer, McpServer, StdioServer


def leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside `exc`'s groups (task groups nest them), or `exc` itself."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def start_failed(server: McpServer, exc: BaseException, http_status: int = 0) -> str:
    """Why `server` did not start, from what its start raised."""
    return f"MCP server '{server.name}' did not start: {_cause(server, exc, http_status)}."


def start_timed_out(server: McpServer, timeout_s: float) -> str:
    """`server` did not finish starting (connect, handshake, tool list) in time."""
    if isinstance(server, HttpServer):
        return (f"MCP server '{server.name}' did not answer within {timeout_s:g} s of connecting to "
                f"{server.where}. Check that it is running and that the URL is its MCP endpoint.")
    return (f"MCP server '{server.name}' did not finish starting within {timeout_s:g} s. Run its command in a "
            "terminal to see whether it starts; a first start that downloads a package can need a longer "
            "start timeout.")


def lost(server: McpServer) -> str:
    """The connection ended while the server was running."""
    if isinstance(server, StdioServer):
        return (f"MCP server '{server.name}' stopped: its process ended or closed its output. Start it again; "
                "if it keeps stopping, run its command in a terminal to see why.")
    return f"MCP server '{server.name}' closed the connection. Start it again when it is back."


def unreachable(server: McpServer, exc: BaseException) -> str:
    """An HTTP server could no longer be reached during a call."""
    return f"MCP server '{server.name}' could no longer be reached: {_cause(server, exc, 0)}. Start it again."


def stopped_answering(server: McpServer, timeout_s: float, probe_s: float) -> str:
    """A call ran out its time, then a check got no answer either."""
    return (f"MCP server '{server.name}' stopped answering: a call ran past its {timeout_s:g} s limit and a check "
            f"got no answer within {probe_s:g} s, so Prefill stopped the server. Start it again.")


def with_context(sentence: str, stderr_tail: str = "", noise_count: int = 0, noise_last: str = "") -> str:
    """`sentence` followed by what the server wrote to stderr, and any lines on its output that were not MCP."""
    if stderr_tail:
        sentence += f" Its last words on stderr: “{stderr_tail}”."
    if noise_count:
        lines = "a line" if noise_count == 1 else f"{noise_count} lines"
        sentence += (f" It also wrote {lines} to its output that are not MCP messages (the last: “{noise_last}”); "
                     "an MCP server must write nothing else to stdout.")
    return sentence


def not_running(name: str, status: str, reason: str) -> str:
    """A call to a server that is not ready (`status` "" when it was never started)."""
    if reason:
        return f"MCP server '{name}' is not running. {reason}"
    if not status:
        return f"MCP server '{name}' is not running: it was never started. Check its name in mcp.json, and start it."
    return f"MCP server '{name}' is {status}, so its tools cannot be called. Start it first."


def unknown_tool(name: str, tool: str) -> str:
    return f"MCP server '{name}' has no tool '{tool}'. Use one of the tools it lists."


def entry_changed(name: str, tool: str) -> str:
    """A call for a tool of a server that has since been replaced by another entry of the same name."""
    return (f"Not run: MCP server '{name}' was changed in mcp.json (or started again from another entry) after "
            f"the model was offered '{tool}'; ask again, and the tool will be offered as it is now.")


def bad_arguments(tool: str, why: str) -> str:
    return f"The arguments for '{tool}' were not sent: {why}. Give them as a JSON object."


def call_timed_out(name: str, tool: str, timeout_s: float, server_lost: bool) -> str:
    """A call that ran past its limit; whether its server still answers decides the rest."""
    head = (f"The tool '{tool}' of MCP server '{name}' did not answer within {timeout_s:g} s, "
            "so Prefill stopped waiting.")
    if server_lost:
        return head + " The server no longer answers at all, so it was stopped; start it again."
    return head + " The server still answers, so it stays on; try again with less work, or a longer timeout."


def call_stopped(tool: str) -> str:
    return f"The call to '{tool}' was stopped before it answered."


def call_refused(name: str, tool: str, exc: MCPError) -> str:
    return f"MCP server '{name}' refused the call to '{tool}': {exc.message or 'no reason given'}."


def call_not_a_result(name: str, tool: str, exc: ValidationError) -> str:
    errors = exc.errors()
    where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
    what = errors[0]["msg"] if errors else "an unexpected shape"
    return (f"MCP server '{name}' answered '{tool}' with something that is not an MCP tool result "
            f"({where or 'the answer'}: {what}). This is a fault in the server; its answer was dropped.")


def call_during_stop(name: str, tool: str) -> str:
    return f"MCP server '{name}' was stopped while '{tool}' was running; the call has no answer."


def call_lost(name: str, tool: str, why: str) -> str:
    return f"The call to '{tool}' has no answer. {why}"


def call_failed(server: McpServer, tool: str, exc: BaseException) -> str:
    return f"The call to '{tool}' on MCP server '{server.name}' failed: {_cause(server, exc, 0)}."


def hub_closed() -> str:
    return "The MCP tools were shut down (Prefill is closing); nothing can be started or called."


def noise_sample(exc: BaseException) -> str:
    """The line a server wrote that was not an MCP message, short and printable, from the transport's
    parse error (control and format characters written as escapes, so a terminal shows, not obeys, them)."""
    text = ""
    if isinstance(exc, ValidationError) and exc.errors():
        value = exc.errors()[0].get("input")
        text = value if isinstance(value, str) else repr(value)
    text = " ".join((text or str(exc)).split())
    text = text if len(text) <= 120 else text[:119] + "…"
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def noise_seen(name: str, sample: str) -> str:
    """Logged once per connection, at the first line on stdout that is not MCP (`sample` from `noise_sample`)."""
    return (f"MCP server '{name}' wrote a line to its output that is not an MCP message: “{sample}”. Prefill "
            "skips such lines (an MCP server must write only MCP messages to stdout); further ones are counted.")


def noise_total(name: str, count: int) -> str:
    """Logged when a connection that skipped more than one such line ends."""
    return f"MCP server '{name}' wrote {count} lines to its output that are not MCP messages; Prefill skipped them."


def _cause(server: McpServer, exc: BaseException, http_status: int) -> str:
    """The clause for the most telling exception inside `exc`."""
    found = list(leaves(exc))
    pick = next((e for e in found if not isinstance(e, MCPError)), found[0] if found else exc)
    if isinstance(server, StdioServer):
        if isinstance(pick, FileNotFoundError):
            if server.cwd and not Path(server.cwd).is_dir():
                return f'the folder in "cwd" ({server.cwd}) does not exist'
            return f"the command '{server.command}' was not found; install it, or write its full path in mcp.json"
        if isinstance(pick, PermissionError):
            return f"'{server.command}' cannot be run (permission denied); check it is a program and executable"
        if isinstance(pick, OSError):
            return f"'{server.command}' could not be started ({pick.strerror or pick})"
    if isinstance(server, HttpServer):
        sse_hint = ""
        if server.where.rstrip("/").endswith("/sse"):
            sse_hint = (" (it looks like an old SSE endpoint, which Prefill does not speak: use the server's "
                        "streamable HTTP endpoint, often ending in /mcp)")
        if http_status in (401, 403):
            return (f"{server.where} refused access (HTTP {http_status}); check the token in this server's "
                    '"headers" in mcp.json')
        if http_status == 404:
            return f"there is no MCP endpoint at {server.where} (HTTP 404); check the URL{sse_hint}"
        if http_status >= 400:
            return f"{server.where} answered HTTP {http_status}{sse_hint}"
        if isinstance(pick, httpx2.ConnectError):
            return (f"could not connect to {server.where} ({pick}); check that the server is running "
                    "and the URL is right")
        if isinstance(pick, httpx2.TimeoutException):
            return f"{server.where} did not answer in time"
        if isinstance(pick, httpx2.HTTPError):
            return f"the request to {server.where} failed ({type(pick).__name__}: {pick})"
    if isinstance(pick, MCPError):
        if pick.code == types.CONNECTION_CLOSED:
            return "it ended (or closed its output) before it finished starting"
        return f"it answered with an error: {pick.message}"
    if isinstance(pick, ValidationError):
        return "it answered with something that is not MCP"
    if isinstance(pick, RuntimeError) and "protocol version" in str(pick):
        return f"it speaks a version of MCP this client does not ({pick})"
    return f"{type(pick).__name__}: {pick}"
