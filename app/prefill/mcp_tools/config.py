"""The door for MCP server entries: the `mcpServers` shape LM Studio, Claude Desktop and Cursor use.

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                  "env": {"KEY": "…"}},
        "search": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}}}}

Every entry is checked here, once, into a frozen `StdioServer` or `HttpServer`; an entry that is
not right becomes an `EntryProblem` worded for a person, and the others still load. Unknown keys
(other apps add their own, such as "autoApprove") are ignored. Env values and headers hold
secrets: no repr shows them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

MAX_NAME_CHARS = 64
MAX_TEXT_CHARS = 32_768  # one command, argument, path, URL or value
MAX_ITEMS = 256  # arguments, environment variables or headers of one entry

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")  # RFC 9110 token
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HTTP_TYPES = ("http", "streamable-http", "streamable_http", "streamableHttp")


@dataclass(frozen=True)
class StdioServer:
    """An MCP server Prefill starts as a process and talks to over its stdin and stdout.

    Attributes:
        name: The entry's key in mcp.json (unique there).
        command: The program to run (`npx`, `uvx`, a full path…), looked up on PATH.
        args: Its arguments.
        env: Environment variables added to the few the process inherits (HOME, PATH, USER…);
            pairs, so the entry stays immutable. Often holds keys: never in a repr.
        cwd: The folder it runs in ("" = Prefill's own).
        disabled: Listed but turned off ("disabled": true).
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    cwd: str = ""
    disabled: bool = False


@dataclass(frozen=True)
class HttpServer:
    """An MCP server Prefill reaches over streamable HTTP.

    Attributes:
        name: The entry's key in mcp.json (unique there).
        url: The endpoint, http or https (often ending in /mcp). May carry a key in its query:
            never in a repr; show `where` instead.
        headers: Sent with every request (an Authorization header…); never in a repr.
        disabled: Listed but turned off ("disabled": true).
    """

    name: str
    url: str = field(repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    disabled: bool = False

    @property
    def where(self) -> str:
        """The URL without its user, password, query or fragment: safe to show and to log."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port is not None else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"


McpServer = StdioServer | HttpServer


@dataclass(frozen=True)
class EntryProblem:
    """One entry of mcp.json that was refused, and why.

    Attributes:
        name: The entry's key.
        message: What is wrong and what to do, for a person.
        raw: The entry as it was written (JSON text), so saving the list keeps it for the person to fix.
    """

    name: str
    message: str
    raw: str = field(default="null", repr=False)


@dataclass(frozen=True)
class McpConfig:
    """What mcp.json holds once checked.

    Attributes:
        servers: The usable entries, in the file's order.
        problems: The refused entries, each with its reason.
    """

    servers: tuple[McpServer, ...] = ()
    problems: tuple[EntryProblem, ...] = ()

    def server(self, name: str) -> McpServer | None:
        """The usable entry called `name`, or None."""
        return next((s for s in self.servers if s.name == name), None)


class _Refused(Exception):
    """One entry's fault, already worded (without the entry's name)."""


def parse_config(data: object) -> McpConfig:
    """Check a parsed mcp.json document.

    Args:
        data: What `json.loads` gave for the file.

    Raises:
        ValueError: The document is not an object with an `mcpServers` object (a clause saying
            what it is instead). One bad entry is never raised: it becomes an `EntryProblem`.
    """
    if not isinstance(data, dict):
        raise ValueError(f"it holds {_kind(data)}, not an object with \"mcpServers\"")
    if "mcpServers" not in data:
        if isinstance(data.get("servers"), dict):
            raise ValueError('it has "servers" (VS Code\'s name for the list); Prefill reads "mcpServers": rename it')
        return McpConfig()
    entries = data["mcpServers"]
    if not isinstance(entries, dict):
        raise ValueError(f'"mcpServers" is {_kind(entries)}; it must be an object of named servers')
    servers: list[McpServer] = []
    problems: list[EntryProblem] = []
    for name, entry in entries.items():
        try:
            servers.append(_parse_entry(name, entry))
        except _Refused as exc:
            problems.append(EntryProblem(name, f"MCP server \"{_shown(name)}\": {exc}", _raw(entry)))
    return McpConfig(tuple(servers), tuple(problems))


def _parse_entry(name: str, entry: object) -> McpServer:
    """One entry of `mcpServers`, checked.

    Raises:
        _Refused: What is wrong with it (worded, without its name).
    """
    if not name.strip():
        raise _Refused("the name is empty; give the server a name")
    if len(name) > MAX_NAME_CHARS or _CONTROL.search(name):
        raise _Refused(f"the name must be at most {MAX_NAME_CHARS} printable characters")
    if not isinstance(entry, dict):
        raise _Refused(f"it is {_kind(entry)}; it must be an object with \"command\" or \"url\"")
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and not isinstance(kind, str):
        raise _Refused(f'"type" is {_kind(kind)}; write "stdio" or "http", or leave it out')
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise _Refused(f'"disabled" is {_kind(disabled)}; write true or false')
    if kind == "sse":
        raise _Refused('the old SSE transport ("type": "sse") is not supported; use the server\'s streamable '
                       'HTTP endpoint (often ending in /mcp) and leave "type" out')
    if kind is not None and kind != "stdio" and kind not in _HTTP_TYPES:
        raise _Refused(f'"type" is "{_shown(kind)}"; Prefill knows "stdio" and "http"')
    has_command, has_url = "command" in entry, "url" in entry
    if has_command and has_url:
        raise _Refused('it has both "command" and "url"; keep "command" for a program Prefill starts, '
                       '"url" for a server already running')
    if not has_command and not has_url:
        raise _Refused('it has neither "command" (a program to start) nor "url" (a running server)')
    if has_command:
        if kind in _HTTP_TYPES:
            raise _Refused(f'"type" is "{kind}" but the entry has a "command"; an HTTP server needs a "url"')
        return StdioServer(
            name=name,
            command=_text(entry["command"], '"command"', empty_ok=False),
            args=tuple(_texts(entry.get("args", []), '"args"')),
            env=_pairs(entry.get("env", {}), '"env"', _ENV_NAME, "an environment variable name"),
            cwd=_text(entry.get("cwd", ""), '"cwd"', empty_ok=True),
            disabled=disabled,
        )
    if kind == "stdio":
        raise _Refused('"type" is "stdio" but the entry has a "url"; a program to start needs a "command"')
    return HttpServer(
        name=name,
        url=_url(entry["url"]),
        headers=_pairs(entry.get("headers", {}), '"headers"', _HEADER_NAME, "an HTTP header name"),
        disabled=disabled,
    )


def config_document(servers: Iterable[McpServer], keep: Iterable[EntryProblem] = ()) -> dict[str, Any]:
    """The mcp.json document for `servers`, plus each refused entry in `keep` as it was written
    (unless a server of the same name replaces it), so saving never loses what a person typed."""
    entries: dict[str, Any] = {}
    for server in servers:
        entries[server.name] = _entry(server)
    for problem in keep:
        if problem.name not in entries:
            entries[problem.name] = json.loads(problem.raw)
    return {"mcpServers": entries}


def _entry(server: McpServer) -> dict[str, Any]:
    out: dict[str, Any]
    if isinstance(server, StdioServer):
        out = {"command": server.command}
        if server.args:
            out["args"] = list(server.args)
        if server.env:
            out["env"] = dict(server.env)
        if server.cwd:
            out["cwd"] = server.cwd
    else:
        out = {"url": server.url}
        if server.headers:
            out["headers"] = dict(server.headers)
    if server.disabled:
        out["disabled"] = True
    return out


def _text(value: object, what: str, *, empty_ok: bool) -> str:
    if not isinstance(value, str):
        raise _Refused(f"{what} is {_kind(value)}; it must be a string")
    if not empty_ok and not value.strip():
        raise _Refused(f"{what} is empty")
    if "\x00" in value:
        raise _Refused(f"{what} holds a NUL character, which no program can be given")
    if len(value) > MAX_TEXT_CHARS:
        raise _Refused(f"{what} is longer than {MAX_TEXT_CHARS} characters")
    return value


def _texts(value: object, what: str) -> list[str]:
    if not isinstance(value, list):
        raise _Refused(f"{what} is {_kind(value)}; it must be a list of strings")
    if len(value) > MAX_ITEMS:
        raise _Refused(f"{what} has {len(value)} items; at most {MAX_ITEMS} are accepted")
    return [_text(item, f"item {i + 1} of {what}", empty_ok=True) for i, item in enumerate(value)]


def _pairs(value: object, what: str, key_rule: re.Pattern[str], key_kind: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise _Refused(f"{what} is {_kind(value)}; it must be an object of names and string values")
    if len(value) > MAX_ITEMS:
        raise _Refused(f"{what} has {len(value)} entries; at most {MAX_ITEMS} are accepted")
    out = []
    for key, item in value.items():
        if not key_rule.match(key):
            raise _Refused(f'{what} has "{_shown(key)}", which is not {key_kind}')
        text = _text(item, f'{what} "{key}"', empty_ok=True)
        if what == '"headers"' and ("\r" in text or "\n" in text):
            raise _Refused(f'{what} "{key}" holds a line break, which no header may')
        out.append((key, text))
    return tuple(out)


def _url(value: object) -> str:
    url = _text(value, '"url"', empty_ok=False).strip()
    if _CONTROL.search(url):
        raise _Refused('"url" holds a control character (a line break or tab?)')
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks the port
    except ValueError as exc:
        raise _Refused(f'"url" is not a URL ({exc})') from None
    if parts.scheme not in ("http", "https"):
        raise _Refused('"url" must start with http:// or https://')
    if not parts.hostname:
        raise _Refused('"url" has no host name')
    return url


def _kind(value: object) -> str:
    """A JSON value's kind, as a person reads it: "a number", "a list"…"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _shown(text: str, limit: int = 64) -> str:
    """Text from the file, short and on one line, for a message."""
    flat = _CONTROL.sub("?", text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _raw(entry: object) -> str:
    return json.dumps(entry, ensure_ascii=False)
