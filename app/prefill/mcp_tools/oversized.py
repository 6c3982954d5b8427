"""A server's message too long to read whole, turned into one the session can take.

Only the head and the tail of such a line were kept (`stdio_transport.LineSplitter`). When it is
an answer to a request (its "id" found at the top level of the head, or in the tail), the session
gets an answer for that id: a tool result carrying the beginning of the first text it held, with
its size in `_meta` (`CUT_META`), so the call ends at once with a cut result and the server stays
on. It is marked `isError` on the wire so the SDK does not check it against the tool's output
schema (its structured content is gone); the connection reads the tool's own isError back from
`_meta`. An error answer keeps the beginning of its message; anything else (a request or a
notification from the server, or a line with no id) is dropped, counted like a line that is not MCP.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

from prefill.engine.units import format_bytes

CUT_META = "prefill/cut"  # {"bytes": the line's size, "isError": what the tool said}
MAX_ERROR_CHARS = 2000

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL)
_PARTIAL_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{0,3}\Z")
_TEXT_KEY = re.compile(r'"text"\s*:\s*"')
_MESSAGE_KEY = re.compile(r'"message"\s*:\s*"')
_TAIL_ID = re.compile(r'"id"\s*:\s*(-?\d+|"[^"\\]{0,200}")\s*[,}]')
_IS_ERROR = re.compile(r'"isError"\s*:\s*true')
_RESULT_TYPE = re.compile(r'"resultType"\s*:\s*("[A-Za-z_]{1,40}")')  # required on the 2026-07-28 protocol


@dataclass(frozen=True)
class Oversized:
    """A line longer than the transport reads whole.

    Attributes:
        head: Its first bytes.
        tail: Its last bytes.
        size: Its length in bytes (without the newline).
    """

    head: bytes
    tail: bytes
    size: int


class TooLarge(Exception):
    """A message too long to read that answers nothing Prefill asked (counted with the noise)."""


def oversized_message(line: Oversized) -> SessionMessage | Exception:
    """The message to hand the session for `line` (an exception value when there is none)."""
    head = line.head.decode("utf-8", "ignore")
    tail = line.tail.decode("utf-8", "ignore")
    keys = top_level_keys(head)
    message_id = _id(head, keys, tail)
    what = f"a message of {format_bytes(line.size)}, too long to read"
    if message_id is None or "method" in keys:
        return TooLarge(what)
    if "error" in keys:
        found = _MESSAGE_KEY.search(head, keys["error"])
        said = string_prefix(head, found.end())[:MAX_ERROR_CHARS] if found else ""
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=f"{said}… ({what}, cut)")
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message_id, error=error))
    found = _TEXT_KEY.search(head, keys.get("result", 0))
    text = string_prefix(head, found.end()) if found else ""
    said_error = bool(_IS_ERROR.search(head) or _IS_ERROR.search(tail))
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": text}],
        "isError": True,
        "_meta": {CUT_META: {"bytes": line.size, "isError": said_error}},
    }
    said_type = _RESULT_TYPE.findall(head) or _RESULT_TYPE.findall(tail)  # often in the middle, lost: then
    result["resultType"] = json.loads(said_type[0]) if said_type else "complete"  # the spec's meaning of none
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=message_id, result=result))


def cut_size(meta: dict[str, Any] | None) -> tuple[int, bool] | None:
    """From a result's `_meta`: the size of the message it was cut from and the tool's own isError
    (None when it was not cut here)."""
    mark = (meta or {}).get(CUT_META)
    if not isinstance(mark, dict) or not isinstance(mark.get("bytes"), int):
        return None
    return mark["bytes"], bool(mark.get("isError"))


def top_level_keys(text: str) -> dict[str, int]:
    """The keys of the JSON object `text` begins (perhaps only its beginning), each with where its
    value starts; keys of nested objects are skipped, and a string that runs past the end stops it."""
    keys: dict[str, int] = {}
    depth, i, n = 0, 0, len(text)
    expect_key = False
    while i < n:
        c = text[i]
        if c == '"':
            m = _STRING.match(text, i)
            if m is None:
                break
            i = m.end()
            if depth == 1 and expect_key:
                while i < n and text[i] in " \t\r\n":
                    i += 1
                if i < n and text[i] == ":":
                    try:
                        keys.setdefault(json.loads(m.group()), i + 1)
                    except ValueError:
                        break
            expect_key = False
            continue
        if c in "{[":
            depth += 1
            expect_key = c == "{" and depth == 1
        elif c in "}]":
            depth -= 1
        elif c == "," and depth == 1:
            expect_key = True
        i += 1
    return keys


def string_prefix(text: str, start: int) -> str:
    """The JSON string whose body starts at `text[start]`, decoded up to its closing quote or, when
    `text` ends first, as far as it goes (an escape cut in two is dropped)."""
    body = _STRING_BODY.match(text, start)
    raw = body.group() if body else ""
    raw = _PARTIAL_ESCAPE.sub("", raw)
    try:
        decoded = json.loads(f'"{raw}"')
    except ValueError:
        return ""
    return decoded if isinstance(decoded, str) else ""


def _id(head: str, keys: dict[str, int], tail: str) -> int | str | None:
    """The message's id: at the top level of its head, else the last one its tail shows."""
    if "id" in keys:
        try:
            value, _ = json.JSONDecoder().raw_decode(head, _skip_space(head, keys["id"]))
        except ValueError:
            value = None
        return value if isinstance(value, int | str) and not isinstance(value, bool) else None
    found = _TAIL_ID.findall(tail)
    if not found:
        return None
    value = json.loads(found[-1])
    return value if isinstance(value, int | str) else None


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i
