"""The data of server-sent events, as OpenAI-compatible streams send them.

Only what those streams use: `data:` lines (joined by newlines when an event has several),
events ended by a blank line, `:` comments (keep-alive pings) and other fields ignored.

What comes from the server is bounded here: a line, and the data of one event, past its bound
stops the reading with `SseTooLarge` (an OpenAI chunk is a few hundred bytes), so an endless
line or event costs the client its bound, not all its memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

MAX_LINE_BYTES = 2**20  # one line of the stream; a chunk of an OpenAI stream is a few hundred bytes
MAX_EVENT_CHARS = 2**20  # one event's data, its data lines joined

_EOL = re.compile(rb"\r\n?|\n")  # SSE ends a line with CRLF, LF or a lone CR


class SseTooLarge(ValueError):
    """A line, or an event's data, past its bound.

    Attributes:
        what: "a line" or "an event".
        limit: The bound it passed, in bytes (characters for an event's data).
    """

    def __init__(self, what: str, limit: int):
        super().__init__(f"{what} of more than {limit} bytes")
        self.what = what
        self.limit = limit


def sse_lines(chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """Split a stream's bytes into its lines (without their ends), each as soon as its end arrives.

    Raises:
        SseTooLarge: a line longer than `max_line` bytes, refused before the rest of it is read.
    """
    pending = bytearray()
    after_cr = False  # the last chunk ended with CR: a LF that starts this one ends no new line
    for chunk in chunks:
        pos = 1 if after_cr and chunk[:1] == b"\n" else 0
        after_cr = after_cr and not chunk
        for end in _EOL.finditer(chunk, pos):
            if len(pending) + end.start() - pos > max_line:
                raise SseTooLarge("a line", max_line)
            pending += chunk[pos:end.start()]
            yield pending.decode("utf-8", "replace")  # SSE is UTF-8; CR and LF are never inside a character
            pending.clear()
            pos = end.end()
            after_cr = end.group() == b"\r" and pos == len(chunk)
        if len(pending) + len(chunk) - pos > max_line:
            raise SseTooLarge("a line", max_line)
        pending += chunk[pos:]
    if pending:
        yield pending.decode("utf-8", "replace")


def sse_data(lines: Iterable[str], max_data: int = MAX_EVENT_CHARS) -> Iterator[str]:
    """Yield each event's data, in order; an event without data yields nothing.

    Raises:
        SseTooLarge: an event whose data (its lines joined) passes `max_data` characters.
    """
    data: list[str] = []
    size = 0
    for line in lines:
        line = line.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data, size = [], 0
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            value = value[1:] if value.startswith(" ") else value
            size += len(value) + (1 if data else 0)
            if size > max_data:
                raise SseTooLarge("an event", max_data)
            data.append(value)
    if data:  # a last event without its blank line
        yield "\n".join(data)
