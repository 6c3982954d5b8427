"""Text from outside, as a terminal must show it: the one filter every such character passes.

The model's words, a remote server's, an MCP server's tools and results, the hub's and the
library's names, and errors that quote any of them reach the terminal through here. A terminal
obeys some characters instead of showing them: ESC starts the sequences that move the cursor,
restyle or conceal text (ESC[8m), retitle the window (ESC]0;…BEL) or set the clipboard; BEL,
backspace and CR let later text overwrite what was shown; the C1 controls (U+0080–U+009F) are
the same sequences in one character; bidi overrides and isolates reorder a line so that it reads
other than it is. Each of these is written as a visible escape instead (``\\x1b``, ``\\r``,
``\\u202e``), and NUL, DEL, the line and paragraph separators and lone surrogates (which cannot
even be encoded) with them.

The filter maps one character at a time, so a stream cut anywhere comes out as the whole text
would: an escape sequence split across two tokens is harmless in each, as ESC itself is never
written. The program's own escapes (the dimmed thinking, the reset before a question) are
printed beside it, never through it.
"""

from __future__ import annotations

import re

# The characters taken, as ranges of code points (first, last)
_CONTROL = ((0x00, 0x1F), (0x7F, 0x9F))  # C0, DEL, C1
_INVISIBLE = (
    (0x061C, 0x061C), (0x200E, 0x200F),  # the Arabic letter mark, left-to-right and right-to-left marks
    (0x202A, 0x202E), (0x2066, 0x2069),  # bidi embeddings, overrides and isolates
    (0x2028, 0x2029),  # line and paragraph separators
    (0xD800, 0xDFFF),  # lone surrogates: no terminal encoding takes them
)


def _class(*ranges: tuple[int, int]) -> re.Pattern[str]:
    # The characters themselves (none is special in a class): with \\u escapes the pattern takes ~10x as long to compile
    return re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in ranges) + "]")


_UNSAFE = _class(*_CONTROL, *_INVISIBLE)  # line breaks and tabs too: for names
_UNSAFE_IN_TEXT = _class((0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F), *_INVISIBLE)  # keeps \t and \n
_UNSAFE_IN_JSON = _class((0x7F, 0x9F), *_INVISIBLE)  # json.dumps escapes the C0 controls itself
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_SHOWN: dict[str, str] = {}  # how each character met so far is shown: a lookup, twice as fast as working it out


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    shown = _SHOWN.get(c)
    if shown is None:
        n = ord(c)
        shown = _SHOWN[c] = _NAMED.get(c) or (f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}")
    return shown


def terminal_text(text: str) -> str:
    """`text` to print as it reads: what a terminal would obey written as a visible escape.

    Newlines and tabs are kept, so an answer keeps its lines; every piece of a stream may be
    passed on its own.
    """
    return _UNSAFE_IN_TEXT.sub(_visible, text)


def terminal_line(text: str) -> str:
    """`text` (a name, a call, a quoted error) kept on its line: newlines and tabs escaped as well."""
    return _UNSAFE.sub(_visible, text)


def terminal_json(dumped: str) -> str:
    """JSON text (from `json.dumps`, ASCII or not) with DEL, the C1 controls and the invisible
    characters above written as ``\\u`` escapes: the same JSON to a reader, nothing to obey
    for a terminal. (json.dumps escapes the C0 controls itself; outside a string JSON is ASCII.)"""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)
