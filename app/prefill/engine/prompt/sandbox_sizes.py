"""How much a chat template asks to build, estimated before anything is built.

The sandbox (`sandbox.py`) refuses a construct whose estimate is past its caps. Sizes are in
characters of text; a list or tuple slot counts as SLOT characters, a dict entry as ENTRY, and
each new object a call makes (a piece `split` cuts out, a row `batch` fills) as OBJECT more:
about what each costs in memory. Estimates err high, and never read a value more than a few
times over. A walk through a nested value stops as soon as it passes its limit, so it takes at
most about that many steps however large, deep, shared or cyclic the value is.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, ItemsView, Iterable, KeysView, Mapping, Sized, ValuesView
from itertools import repeat
from typing import Any, NamedTuple

from jinja2.runtime import Undefined
from jinja2.utils import Namespace

MAX_OUTPUT_CHARS = 8 * 1024 * 1024  # far above any context: 128k tokens are ~600k characters
MAX_VALUE_CHARS = 4 * 1024 * 1024  # one value a template builds
MAX_INT_BITS = 1 << 16  # a number of about 20,000 digits
MAX_EXPONENT = 4096
SLOT = 8
ENTRY = 8 * SLOT
OBJECT = 64
UNBOUNDED = sys.maxsize  # what no cap allows

WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())  # what str.split() splits at
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines() splits at
_CONTROLS = [chr(i) for i in range(32)]


def as_count(value: Any) -> int:
    """A width or count as Python takes it (a bool counts), 0 where Python refuses it anyway."""
    return value if isinstance(value, int) else 0


def pieces(s: Any, separators: str) -> int:
    """The most pieces splitting `s` at any of `separators` (or at each character) can make."""
    if not isinstance(s, str):
        return len(s) + 1 if isinstance(s, bytes) else 1
    return sum(s.count(c) for c in separators) + 1


def _repr_str(s: str) -> int:
    n = len(s) + 2 + s.count("\\") + s.count("'")
    if s.isprintable():
        return n
    if s.isascii():
        return n + sum(s.count(c) * (1 if c in "\n\r\t" else 3) for c in _CONTROLS) + 3 * s.count("\x7f")
    return n + 9 * len(s)  # an unprintable character takes up to ten: \U000e0001


def _json_str(s: str, ensure_ascii: bool) -> int:
    n = len(s) + 2 + s.count('"') + s.count("\\")
    if ensure_ascii and not s.isascii():
        return n + 11 * len(s)  # \ud83d\ude00
    if s.isprintable():
        return n
    return n + sum(s.count(c) * (1 if c in "\n\r\t\b\f" else 5) for c in _CONTROLS)


class _Style(NamedTuple):
    """How `str`, `json.dumps` or `pprint` write a nested value."""

    string: Callable[[str], int]
    item: int = 2  # between items: ", "
    key: int = 2  # between a key and its value: ": "
    indent: int = -1  # json: per level, -1 for one line
    known_only: bool = False  # json: other objects do not serialize at all


_REPR = _Style(_repr_str)
_HELD = _Style(len, item=SLOT, key=ENTRY - SLOT)


_CONTAINERS = (Mapping, ItemsView, KeysView, ValuesView, list, tuple, set, frozenset, Namespace)


def _walk(value: Any, limit: int, style: _Style, pprint: bool = False) -> tuple[int, int]:
    """(the size `style` writes `value` in, the widest pprint indent), stopping past `limit`."""
    total, widest = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and total <= limit:
        v, pad = stack.pop()
        widest = max(widest, pad)
        if isinstance(v, str):
            total += style.string(v)
        elif v is None or isinstance(v, bool):
            total += 5
        elif isinstance(v, int):
            total += v.bit_length() * 3 // 10 + 2
        elif isinstance(v, float):
            total += 24
        elif isinstance(v, bytes):
            total += 4 * len(v) + 3
        elif not isinstance(v, _CONTAINERS) or style.known_only and isinstance(v, Namespace):
            total += 1 if style.known_only else 64  # <Macro 'x'>, <LoopContext 1/3>, a bound method
        else:
            if isinstance(v, Namespace):
                total, v = total + 13, getattr(v, "_Namespace__attrs", {})  # <Namespace {...}>
            child = pad + (style.indent if style.indent >= 0 else 1)
            line = 1 + child if style.indent >= 0 else 0
            total += 16 + len(v) * (style.item + line) + (1 + pad if style.indent >= 0 else 0)
            if total > limit:
                break
            if not isinstance(v, Mapping):
                stack.extend(zip(v, repeat(child)))
                continue
            total += len(v) * style.key
            if not pprint:
                stack.extend(zip(v.keys(), repeat(child)))
                stack.extend(zip(v.values(), repeat(child)))
                continue
            for k, x in v.items():  # pprint indents a value by the key ahead of it
                stack += ((k, child), (x, child + _walk(k, limit, style)[0] + 2))
    return total, widest


def text_size(value: Any, limit: int = MAX_VALUE_CHARS) -> int:
    """About len(str(value)), or more; a walk stops once past `limit`."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Undefined):
        return 0
    return _walk(value, limit, _REPR)[0]


def repr_size(value: Any, limit: int = MAX_VALUE_CHARS) -> int:
    """About len(repr(value)), or more."""
    return _walk(value, limit, _REPR)[0]


def held_size(value: Any, limit: int = UNBOUNDED) -> int:
    """What a value holds: its strings' characters and its slots."""
    return _walk(value, limit, _HELD)[0]


def cost(value: Any) -> int:
    """What a value just built costs, not counting what it shares with others."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return SLOT * len(value)
    if isinstance(value, Mapping):
        return ENTRY * len(value)
    if isinstance(value, Namespace):
        return ENTRY * len(getattr(value, "_Namespace__attrs", ()))
    if isinstance(value, int):
        return value.bit_length() // 8
    return 0


def json_size(
    value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False,
) -> int:
    """About len(json.dumps(...)) with these options, or more."""
    step = len(indent) if isinstance(indent, str) else max(as_count(indent), 0) if indent is not None else -1
    item, key = separators if isinstance(separators, (tuple, list)) and len(separators) == 2 else (
        ("," if step >= 0 else ", "), ": ")
    style = _Style(lambda s: _json_str(s, ensure_ascii), text_size(item), text_size(key), step, known_only=True)
    return _walk(value, MAX_VALUE_CHARS, style)[0]


def pprint_size(value: Any) -> int:
    """pprint indents each line by the keys ahead of it: at most every character of the text a
    line of its own, each as wide as the widest indent."""
    total, widest = _walk(value, MAX_VALUE_CHARS, _REPR, pprint=True)
    return total * (widest + 2)


def _digits(run: str) -> int:
    run = run.lstrip("0")
    return int(run or "0") if len(run) <= 9 else UNBOUNDED


def spec_size(spec: str) -> int:
    """What a `str.format` spec ('>10', '0{}', '.3f') may add: every number in it, summed (Python
    reads any decimal digit there, '٩' too)."""
    total, run = 0, ""
    for c in spec + " ":
        if c.isdecimal():
            run += c
        elif run:
            total, run = total + _digits(run), ""
    return total


def field_size(value: Any) -> int:
    """One formatted field before its spec: a float in fixed notation takes up to ~330 digits."""
    return 330 if isinstance(value, float) else text_size(value)


def printf_size(fmt: str | bytes, args: Any) -> int:
    """About len(fmt % args), or more, parsing the conversions as Python does."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    values = args if isinstance(args, tuple) else (args,)
    mapping = args if isinstance(args, Mapping) else {}
    size, i, at = len(text), 0, text.find("%")
    while 0 <= at < len(text) - 1:
        at += 1
        key = None
        if text[at] == "(":
            depth, start = 1, at + 1
            while depth and at < len(text) - 1:
                at += 1
                depth += {"(": 1, ")": -1}.get(text[at], 0)
            key, at = text[start:at], at + 1
        while at < len(text) and text[at] in "#0- +":
            at += 1
        for part in ("width", "precision"):
            if part == "precision":
                if at >= len(text) or text[at] != ".":
                    break
                at += 1
            if at < len(text) and text[at] == "*":
                size, i, at = size + abs(as_count(values[i] if i < len(values) else 0)), i + 1, at + 1
            else:
                end = at
                while end < len(text) and text[end].isdigit() and text[end].isascii():
                    end += 1
                size, at = size + (_digits(text[at:end]) if end > at else 0), end
        while at < len(text) and text[at] in "hlL":
            at += 1
        kind = text[at] if at < len(text) else "%"
        if kind != "%":
            value = mapping.get(key) if key is not None else values[i] if i < len(values) else None
            i += key is None
            size += repr_size(value) if kind in "ra" else field_size(value)
        at = text.find("%", at + 1)
    return size


def _len(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes)) else text_size(value)


def _count(value: Any) -> int:
    return len(value) if isinstance(value, Sized) else 0


def _same(s: Any, part: Any) -> bool:
    return isinstance(s, str) and isinstance(part, str) or isinstance(s, bytes) and isinstance(part, bytes)


def replace_size(s: Any, old: Any, new: Any, count: Any = -1) -> int:
    n = _len(s)
    found = (n + 1 if not old else s.count(old)) if _same(s, old) else n + 1
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    return n + found * max(_len(new) - (len(old) if _same(s, old) else 0), 0)


def join_size(sep: Any, items: Any) -> int:
    """The items are a list by now: the sandbox reads an iterator into one first."""
    if isinstance(items, (str, bytes)):
        return len(items) * (1 + _len(sep)) + SLOT * len(items)
    if not isinstance(items, Iterable) or not isinstance(items, Sized):
        return 0
    total = _len(sep) * max(len(items) - 1, 0) + SLOT * len(items)
    for item in items:
        total += _len(item)
        if total > MAX_VALUE_CHARS:
            break
    return total


def _largest(table: Any) -> int:
    values = table.values() if isinstance(table, Mapping) else table if isinstance(table, (list, tuple)) else ()
    return max((_len(v) if v is not None and not isinstance(v, int) else 1 for v in values), default=1)


def _split(s: Any, sep: Any = None, maxsplit: Any = -1) -> int:
    n = pieces(s, WHITESPACE) if sep is None else s.count(sep) + 1 if _same(s, sep) and sep else 1
    if isinstance(maxsplit, int) and maxsplit >= 0:
        n = min(n, maxsplit + 1)
    return _len(s) + n * (SLOT + OBJECT)


def _cased(s: Any, *args: Any) -> int:
    if isinstance(s, (str, bytes)):
        return len(s) if isinstance(s, bytes) or s.isascii() else 3 * len(s)  # 'ﬃ'.upper() is 'FFI'
    return 3 * text_size(s)


def _words(s: Any, at: str = WHITESPACE) -> int:
    """A string cut into words: each word a new object in a list."""
    return pieces(s, at) * (SLOT + OBJECT)


# str and bytes methods whose result can outgrow their receiver; the others are counted after.
METHOD_SIZES: dict[str, Callable[..., int]] = {
    "center": lambda s, width, fill=" ": max(_len(s), as_count(width)),
    "ljust": lambda s, width, fill=" ": max(_len(s), as_count(width)),
    "rjust": lambda s, width, fill=" ": max(_len(s), as_count(width)),
    "zfill": lambda s, width: max(_len(s), as_count(width)),
    "expandtabs": lambda s, tabsize=8: _len(s) + pieces(s, "\t") * max(as_count(tabsize), 0),
    "replace": replace_size,
    "join": join_size,
    "translate": lambda s, table, delete=b"": _len(s) * _largest(table),
    "split": _split,
    "rsplit": _split,
    "splitlines": lambda s, keepends=False: _len(s) + _words(s, LINE_BREAKS),
    "striptags": lambda s: 2 * _len(s) + _words(s),
    "encode": lambda s, *args, **kwargs: 10 * _len(s) + 8,  # 'xmlcharrefreplace': &#1114111;
    "decode": lambda s, *args, **kwargs: 4 * _len(s) + 8,  # 'backslashreplace': \xff
    "hex": lambda s, *args: 3 * _len(s),
    "upper": _cased, "lower": _cased, "title": _cased, "capitalize": _cased, "swapcase": _cased, "casefold": _cased,
    "to_bytes": lambda n, length=1, *args, **kwargs: as_count(length),
}


def _escaped(value: Any) -> int:
    if isinstance(value, str):
        return len(value) + 4 * sum(value.count(c) for c in "&<>\"'") if not hasattr(value, "__html__") else len(value)
    return 6 * text_size(value)


def _indent(s: Any, width: Any = 4, first: bool = False, blank: bool = False) -> int:
    step = len(width) if isinstance(width, str) else max(as_count(width), 0)
    return _len(s) + (pieces(s, LINE_BREAKS) + 1) * (step + 1 + SLOT + OBJECT)


def _wordwrap(s: Any, width: Any = 79, break_long_words: bool = True, wrapstring: Any = None,
              break_on_hyphens: bool = True) -> int:
    lines = pieces(s, WHITESPACE + "-") + _len(s) // max(as_count(width), 1)
    return _len(s) + lines * (_len(wrapstring or "\n") + SLOT + OBJECT)


def _sum(items: Any, attribute: Any = None, start: Any = 0) -> int:
    """Summing lists copies the running total at every step."""
    if not isinstance(start, (list, tuple)):
        return 0
    if attribute is not None:
        return UNBOUNDED
    run = work = len(start)
    for item in items if isinstance(items, Iterable) else ():
        run += len(item) if isinstance(item, Sized) else 0
        work += run
        if work > MAX_VALUE_CHARS:
            break
    return SLOT * work


def _list(value: Any) -> int:
    if isinstance(value, str):
        return len(value) * (SLOT + (0 if value.isascii() else OBJECT))
    if isinstance(value, ItemsView):
        return len(value) * (SLOT + OBJECT)
    return SLOT * _count(value)


def _batch(value: Any, linecount: Any, fill_with: Any = None) -> int:
    n, count = _count(value), as_count(linecount)
    return SLOT * n + (n // max(count, 1) + 1) * (SLOT + OBJECT) + (SLOT * count if fill_with is not None else 0)


def _rows(value: Any, *args: Any, **kwargs: Any) -> int:
    """dictsort, items and groupby make a new tuple (and list) per item."""
    return _count(value) * 2 * (SLOT + OBJECT)


def _format(value: Any, *args: Any, **kwargs: Any) -> int:
    """`value|format(...)` is `str(value) % (...)`: the text of a list can hold conversions too."""
    if not isinstance(value, str) and text_size(value) > MAX_VALUE_CHARS:
        return UNBOUNDED
    return printf_size(value if isinstance(value, str) else str(value), kwargs or args)


# Jinja's filters that can build more than a small multiple of what they are given, keyed by name;
# each takes the filter's own arguments. The others are counted after they return.
FILTER_SIZES: dict[str, Callable[..., int]] = {
    "center": lambda value, width=80: max(text_size(value), as_count(width)),
    "indent": _indent,
    "join": lambda value, d="", attribute=None: join_size(d, value),
    "replace": lambda s, old, new, count=None: replace_size(s, old, new, -1 if count is None else count),
    "wordwrap": _wordwrap,
    "tojson": json_size,
    "pprint": pprint_size,
    "format": _format,
    "string": lambda value: text_size(value),
    "list": _list,
    "batch": _batch,
    "slice": lambda value, slices, fill_with=None: SLOT * _count(value) + max(as_count(slices), 0) * (SLOT + OBJECT),
    "sum": _sum,
    "truncate": lambda s, length=255, killwords=False, end="...", leeway=None: text_size(s) + text_size(end),
    "escape": _escaped, "e": _escaped, "forceescape": _escaped,
    "urlencode": lambda value: 12 * text_size(value) + SLOT * _count(value),
    "urlize": lambda value, trim_url_limit=None, nofollow=False, target=None, rel=None, extra_schemes=None: (
        3 * _len(value) + pieces(value, WHITESPACE) * (SLOT + OBJECT + 96 + 2 * (text_size(target) + text_size(rel)))),
    "xmlattr": lambda d, autospace=True: 6 * text_size(d),
    "striptags": lambda value: 2 * text_size(value) + _words(value),
    "title": lambda s: 3 * _len(s) + 2 * _words(s, WHITESPACE + "-({[<"),
    "upper": _cased, "lower": _cased, "capitalize": _cased,
    "dictsort": _rows, "items": _rows, "groupby": _rows, "sort": _rows,  # sort keeps a key per item
    "unique": lambda value, *args, **kwargs: 4 * SLOT * _count(value),  # the set of those seen
    "round": lambda value, precision=0, method="common": 0 if abs(as_count(precision)) <= MAX_EXPONENT else UNBOUNDED,
}

# The filters that read their input's items: an iterator is read into a list first, for the
# estimate and the filter both.
READS_ITEMS = frozenset({"join", "list", "batch", "slice", "sum", "sort", "unique", "groupby"})
