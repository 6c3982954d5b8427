"""One MCP server's session, owned by one task on the MCP client's event loop.

`run` is that task: it connects (a process over stdio, or streamable HTTP), lists the tools,
publishes the state, then waits until it is told to stop or the connection ends; leaving it
closes the session, and the SDK stops a stdio process (stdin closed, then SIGTERM, then SIGKILL,
each after a bounded wait). Calls run as their own tasks on the same loop and share the session.

The transport's read side passes through a relay here, so the end of the connection is noticed
even when no call is running, and lines that are not MCP (a server printing to stdout) are
counted and quoted instead of lost in a log. A server is untrusted input: its tool list is
checked and bounded before anyone sees it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client import Client, Transport
from mcp.client._transport import ReadStream, TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

import prefill
from prefill.mcp_tools import wording
from prefill.mcp_tools.config import HttpServer, McpServer, StdioServer
from prefill.mcp_tools.oversized import cut_size
from prefill.mcp_tools.results import result_text
from prefill.mcp_tools.state import McpTool, ServerState, ServerStatus
from prefill.mcp_tools.stderr_tail import StderrTail
from prefill.mcp_tools.stdio_transport import stdio_transport

log = logging.getLogger(__name__)

STDERR_DRAIN_S = 0.5  # once a process has ended: how long its last words on stderr may take to arrive
PROBE_TIMEOUT_S = 3.0  # after a call times out: how long the server has to show it still answers
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's own; a call's limit is enforced above it
MAX_TOOL_PAGES = 50
MAX_TOOLS = 1000
MAX_TOOL_NAME_CHARS = 128  # the MCP spec's own limit
MAX_DESCRIPTION_CHARS = 8 * 1024
MAX_SCHEMA_CHARS = 64 * 1024
CLIENT_INFO = types.Implementation(name="prefill", version=prefill.__version__)

StateListener = Callable[["ServerConnection", ServerState], None]


class ServerConnection:
    """One server's session. Everything but `settled`/`finished` and `state` is used on the MCP client's loop only.

    Args:
        server: The entry from mcp.json.
        start_timeout_s: How long connecting, the handshake and listing the tools may take together.
        on_state: Called on the loop thread with every new state.
    """

    def __init__(self, server: McpServer, start_timeout_s: float, on_state: StateListener):
        self.server = server
        self.state = ServerState(server.name, ServerStatus.STARTING)
        self.settled = threading.Event()  # the start is over: ready, failed or stopped
        self.finished = threading.Event()  # the owner task has ended: no process, no connection left
        self._start_timeout_s = start_timeout_s
        self._on_state = on_state
        self._client: Client | None = None
        self._scope: anyio.CancelScope | None = None
        self._wake: anyio.Event | None = None
        self._stopping = False
        self._failure = ""  # why it failed once running ("" = it did not)
        self._stderr: StderrTail | None = None
        self._noise_count = 0
        self._noise_last = ""
        self._http_status = 0  # the HTTP error status of the last message sent (0 = none)

    # ---- the owner task

    async def run(self) -> None:
        """Start the server, keep its session until stopped or lost, then close it. Never raises."""
        loop = asyncio.get_running_loop()
        self._wake = anyio.Event()
        deadline = loop.call_later(self._start_timeout_s, self._start_timed_out)
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._stopping:
                    scope.cancel()
                async with AsyncExitStack() as stack:
                    client = await self._open(stack)
                    tools, notes = await self._list_tools(client)
                    deadline.cancel()
                    self._release_stderr_writer()
                    self._client = client
                    info = client.server_info
                    self._set(ServerStatus.READY, tools=tuple(tools), notes=tuple(notes),
                              server_info=f"{info.name} {info.version}".strip() if info else "")
                    await self._wake.wait()
                    self._stopping = True  # from here on, the end of the connection is ours
                    self._client = None
        except Exception as exc:  # every fault becomes the state's sentence; nothing escapes the loop
            if self.state.status is ServerStatus.STARTING:
                await self._drain_stderr()  # a process that exited at start said why on stderr
            self._on_error(exc)
        finally:
            deadline.cancel()
            self._client = None
            self._scope = None
            self._release_stderr_writer()
            if self._failure and self.state.status is not ServerStatus.FAILED:
                self._set(ServerStatus.FAILED, reason=self._failure)
            elif self.state.status in (ServerStatus.STARTING, ServerStatus.READY):
                self._set(ServerStatus.STOPPED)
            if self._noise_count > 1 and self.state.status is not ServerStatus.FAILED:  # a failure's reason says it
                log.warning("%s", wording.noise_total(self.server.name, self._noise_count))
            self.finished.set()

    def request_stop(self) -> None:
        """Stop the server (on the loop): a start is abandoned, a running session closed."""
        self._stopping = True
        if self.state.status is ServerStatus.STARTING and self._scope is not None:
            self._scope.cancel()
        if self._wake is not None:
            self._wake.set()

    # ---- calls (each its own task on the loop)

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> tuple[str, bool, int]:
        """Call `tool`; the answer's text (the caller cuts it to its budget), whether it is an error,
        and, when the transport already cut it (a message too long to read whole), that message's
        size in bytes (else 0).

        A call that runs past `timeout_s` is abandoned (the server is told); if the server then does
        not answer a quick check either, it is marked failed and stopped. Cancelling the task
        abandons the call the same way.
        """
        text, is_error = await self._call(tool, arguments, timeout_s)
        if isinstance(text, types.CallToolResult):
            cut = cut_size(text.meta)
            if cut is not None:
                return result_text(text), cut[1], cut[0]
            return result_text(text), bool(text.is_error), 0
        return text, is_error, 0

    async def _call(self, tool: str, arguments: dict[str, Any],
                    timeout_s: float) -> tuple[types.CallToolResult | str, bool]:
        """The call's result, or why there is none (worded, and an error)."""
        client = self._client
        name = self.server.name
        if client is None or self.state.status is not ServerStatus.READY:
            return wording.not_running(name, self.state.status.value, self.state.reason), True
        if not any(t.name == tool for t in self.state.tools):
            return wording.unknown_tool(name, tool), True
        try:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                answers = await self._still_answers(client, timeout_s)
                return wording.call_timed_out(name, tool, timeout_s, server_lost=not answers), True
            if exc.code == types.CONNECTION_CLOSED:
                if self._stopping and not self._failure:
                    return wording.call_during_stop(name, tool), True
                await self._drain_stderr()
                self._lose(self._failure or wording.lost(self.server))
                return wording.call_lost(name, tool, self._failure), True
            return wording.call_refused(name, tool, exc), True
        except ValidationError as exc:
            return wording.call_not_a_result(name, tool, exc), True
        except Exception as exc:  # a transport fault, or the SDK refusing what came back
            if isinstance(self.server, HttpServer) and any(
                isinstance(e, httpx2.TransportError) for e in wording.leaves(exc)
            ):
                self._lose(wording.unreachable(self.server, exc))
            return wording.call_failed(self.server, tool, exc), True
        return result, bool(result.is_error)

    # ---- inside

    async def _open(self, stack: AsyncExitStack) -> Client:
        transport: Transport
        if isinstance(self.server, StdioServer):
            self._stderr = StderrTail(self.server.name)
            transport = stdio_transport(self.server, self._stderr.writer)
        else:
            http = httpx2.AsyncClient(headers=dict(self.server.headers), timeout=HTTP_TIMEOUT,
                                      event_hooks={"response": [self._on_http_response]})
            await stack.enter_async_context(http)
            transport = streamable_http_client(self.server.url, http_client=http)
        client = Client(self._watched(transport), client_info=CLIENT_INFO, cache=None)
        return await stack.enter_async_context(client)

    @asynccontextmanager
    async def _watched(self, inner: Transport) -> AsyncIterator[TransportStreams]:
        """`inner`, its read side passed through `_relay`."""
        async with inner as (read, write):
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._relay, read, send)
                try:
                    yield receive, write
                finally:
                    tg.cancel_scope.cancel()
                    receive.close()

    async def _relay(self, read: ReadStream[SessionMessage | Exception],
                     send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        async with send:
            try:
                async for item in read:
                    if isinstance(item, Exception):  # a line that is not JSON-RPC: noted, not fatal
                        self._noise_count += 1
                        self._noise_last = wording.noise_sample(item)
                        if self._noise_count == 1:  # once: the rest are counted, and the count told at the end
                            log.warning("%s", wording.noise_seen(self.server.name, self._noise_last))
                        continue
                    await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            if not self._stopping:
                await self._drain_stderr()
                self._lose(wording.lost(self.server))

    async def _list_tools(self, client: Client) -> tuple[list[McpTool], list[str]]:
        """The server's tools, checked: each a name, a description and a schema of bounded size."""
        caps = client.server_capabilities
        if caps.tools is None:
            return [], ["It offers no tools."]
        tools: list[McpTool] = []
        skipped: list[str] = []
        seen: set[str] = set()
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                why = _refusal(tool, seen)
                if why:
                    skipped.append(why)
                    continue
                seen.add(tool.name)
                description = (tool.description or "").strip()
                if len(description) > MAX_DESCRIPTION_CHARS:
                    description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
                tools.append(McpTool(self.server.name, tool.name, "", description,
                                     json.dumps(tool.input_schema, ensure_ascii=False)))
            cursor = page.next_cursor
            if not cursor or len(tools) >= MAX_TOOLS:
                break
        notes = [f"Left out: {why}." for why in skipped[:10]]
        if len(skipped) > 10:
            notes.append(f"…and {len(skipped) - 10} more tools left out.")
        if cursor:
            notes.append(f"It lists more tools than Prefill reads (the first {len(tools)} are used).")
        return tools[:MAX_TOOLS], notes

    async def _still_answers(self, client: Client, timeout_s: float) -> bool:
        """After a call timed out: does the server answer anything? If not, it is lost."""
        try:
            with anyio.fail_after(PROBE_TIMEOUT_S):
                await client.list_tools()
            return True
        except Exception:
            self._lose(wording.stopped_answering(self.server, timeout_s, PROBE_TIMEOUT_S))
            return False

    def _lose(self, why: str) -> None:
        """The connection is gone or useless: remember why and end the owner task, which publishes it."""
        if not self._failure:
            self._failure = self._with_context(why)
        if self.state.status is ServerStatus.READY:  # said at once, so a caller sees it when its call returns
            self._set(ServerStatus.FAILED, reason=self._failure)
        if self._wake is not None:
            self._wake.set()

    def _start_timed_out(self) -> None:
        if self.state.status is ServerStatus.STARTING and not self._stopping:
            self._failure = self._with_context(wording.start_timed_out(self.server, self._start_timeout_s))
            self._set(ServerStatus.FAILED, reason=self._failure)
            if self._scope is not None:
                self._scope.cancel()

    def _on_error(self, exc: Exception) -> None:
        if self.state.status is ServerStatus.STARTING and not self._stopping:
            self._set(ServerStatus.FAILED,
                      reason=self._with_context(wording.start_failed(self.server, exc, self._http_status)))
        elif self._stopping or self._failure:
            log.debug("mcp: %s: closing: %r", self.server.name, exc)
        else:
            self._lose(wording.start_failed(self.server, exc, self._http_status))
            log.warning("mcp: %s: session ended: %r", self.server.name, exc)

    def _with_context(self, sentence: str) -> str:
        tail = self._stderr.tail() if self._stderr is not None else ""
        return wording.with_context(sentence, tail, self._noise_count, self._noise_last)

    def _set(self, status: ServerStatus, **fields: Any) -> None:
        self.state = ServerState(self.server.name, status, **fields)
        if status is not ServerStatus.STARTING:
            self.settled.set()
        self._on_state(self, self.state)

    async def _drain_stderr(self) -> None:
        """The connection ended: give the stderr reader a moment to take the process's last words."""
        if self._stderr is not None:
            self._stderr.release_writer()
            await anyio.to_thread.run_sync(self._stderr.wait_drained, STDERR_DRAIN_S)

    def _release_stderr_writer(self) -> None:
        if self._stderr is not None:
            self._stderr.release_writer()

    async def _on_http_response(self, response: httpx2.Response) -> None:
        if response.request.method == "POST":  # the status of the last message sent, for a failed start's words
            self._http_status = response.status_code if response.status_code >= 400 else 0


def _refusal(tool: types.Tool, seen: set[str]) -> str:
    """Why a listed tool cannot be offered ("" when it can)."""
    name = tool.name
    shown = name if len(name) <= 40 else name[:39] + "…"
    if not name or len(name) > MAX_TOOL_NAME_CHARS or any(ord(c) < 32 for c in name):
        return f"a tool whose name is empty, too long or unprintable ('{shown}')"
    if name in seen:
        return f"a second tool named '{shown}'"
    if len(json.dumps(tool.input_schema)) > MAX_SCHEMA_CHARS:
        return f"'{shown}', whose argument schema is larger than {MAX_SCHEMA_CHARS // 1024} KiB"
    return ""

