"""The data of server-sent events, as OpenAI-compatible streams send them.

Only what those streams use: `data:` lines (joined by newlines when an event has several),
events ended by a blank line, `:` comments (keep-alive pings) and other fields ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """Yield each event's data, in order; an event without data yields nothing."""
    data: list[str] = []
    for line in lines:
        line = line.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:  # a last event without its blank line
        yield "\n".join(data)
