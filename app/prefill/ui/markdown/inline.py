"""Inline markdown (escapes, code spans, links, emphasis) in time linear in the text.

A model's answer is hostile input: one line of 40,000 ``***a `` or ``[`` must not
cost seconds on the GUI thread. So no pattern here scans ahead from a place it may
have to give up and retry from the next character:

* code spans find their closing run of backticks by a lookup in the runs of the
  text, listed once (``_Backticks``);
* links find their ``]`` and the line end by searches that are cached until passed
  (``_NextChar``), and the ``(url)`` after a given ``]`` is tried once;
* emphasis is matched with a delimiter stack, as CommonMark specifies it
  (``_emphasis``): every run of ``*``, ``_`` or ``~~`` is visited a bounded number
  of times, instead of regexes that scan to the end of the line from every opener.

Every character of the source is escaped; the only markup is what this module
writes: ``<code>``, ``<a>`` for http, https and mailto, ``<b>``, ``<i>`` and ``<s>``.

An answer that cites sources has its marks ``[1]``, ``[1, 3]`` as links to ``cite:N`` (``cites``: the
numbers that point at a source given); a mark that points at none stays text. A mark is read as
``documents/sources.py`` reads it: not right after a letter or digit (``a[1]`` is an index), never
inside code.
"""

from __future__ import annotations

import html
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
CITE_SCHEME = "cite"  # a citation mark's link: cite:N opens source N

_TRIGGER_RE = re.compile(r"\\[\\`*_{}\[\]()#+\-.!|~<>]|`+|!?\[|<(?:https?|mailto):|https?://")
_LINK_TAIL_RE = re.compile(r"\((?P<url>(?:[^()\s]|\([^()\s]*\))*)(?:\s+\"[^\"\n]*\")?\)")
_AUTO_RE = re.compile(r"<(?P<url>(?:https?|mailto):[^<>\s]+)>")
_BARE_RE = re.compile(r"https?://[^\s<>\"]*[^\s<>\"().,;:!?'*_\]]")
_DELIM_RE = re.compile(r"\*+|_+|~+")
_PLACEHOLDER_RE = re.compile("\x00(\\d+)\x00")
_MARK_RE = re.compile(r"\d{1,3}(?: *, *\d{1,3})*\]")  # after the "[": bounded by the next non-digit
_MARK_PARTS_RE = re.compile(r"(\d+)")
_MARKUP_RE = re.compile(r"[\\`*_~\[<\x00]|https?://")  # what can start markup: text without any is only escaped


def is_safe_url(url: str) -> bool:
    """Whether a link may be clickable: an http, https or mailto address, no spaces."""
    scheme, sep, _ = url.partition(":")
    return bool(sep) and scheme.lower() in SAFE_SCHEMES and url.isprintable() and " " not in url


class _NextChar:
    """``text.find(char, p)`` for growing ``p``, each stretch of text searched once."""

    def __init__(self, text: str, char: str) -> None:
        self._text, self._char = text, char
        self._from, self._at = 0, -2  # the last answer: no `char` in [_from, _at)

    def __call__(self, p: int) -> int:
        if not (p >= self._from and (self._at == -1 or p <= self._at)):
            self._from, self._at = p, self._text.find(self._char, p)
        return self._at


class _Backticks:
    """The runs of backticks of a text, by length, to find a code span's closing run."""

    def __init__(self, text: str) -> None:
        self._starts: dict[int, list[int]] = {}
        for m in re.finditer("`+", text):
            self._starts.setdefault(m.end() - m.start(), []).append(m.start())

    def closing(self, length: int, after: int) -> int:
        """Start of the first run of exactly ``length`` backticks at or after ``after``, or -1."""
        starts = self._starts.get(length, [])
        i = bisect_left(starts, after)
        return starts[i] if i < len(starts) else -1


@dataclass(slots=True)
class _Delim:
    """A run of emphasis characters and the tags matched on it."""

    char: str
    count: int
    length: int  # the run as written (CommonMark's rule of three looks at it)
    can_open: bool
    can_close: bool
    opens: list[str] = field(default_factory=list)  # innermost first
    closes: list[str] = field(default_factory=list)  # innermost first

    def html(self) -> str:
        """The run as written minus what was matched; tags on the side of what they wrap."""
        if not (self.opens or self.closes):
            return self.char * self.count
        return ("".join(f"</{t}>" for t in self.closes) + self.char * self.count
                + "".join(f"<{t}>" for t in reversed(self.opens)))


_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _is_punct(ch: str) -> bool:
    if ch < "\x80":
        return ch in _ASCII_PUNCT
    return unicodedata.category(ch)[0] in "PS"


def _delimiter(run: str, before: str, after: str) -> _Delim | None:
    """A delimiter run with its CommonMark flanking, or None when it can do nothing."""
    c = run[0]
    if c == "~" and len(run) != 2:
        return None
    left = not after.isspace() and (not _is_punct(after) or before.isspace() or _is_punct(before))
    right = not before.isspace() and (not _is_punct(before) or after.isspace() or _is_punct(after))
    if c == "_":  # no emphasis inside words: snake_case_name
        can_open, can_close = left and (not right or _is_punct(before)), right and (not left or _is_punct(after))
    else:
        can_open, can_close = left, right
    if not (can_open or can_close):
        return None
    return _Delim(c, len(run), len(run), can_open, can_close)


def _emphasis(text: str) -> str:
    """``*``, ``**``, ``_``, ``__``, ``***`` and ``~~`` as tags, by CommonMark's delimiter stack.

    Linear: a closer looks back for an opener no further than where the last failed
    search of its kind started (``bottoms``), and what lies between a matched pair is
    taken off the stack.
    """
    parts: list[str | _Delim] = []
    delims: list[_Delim] = []
    last, n = 0, len(text)
    for m in _DELIM_RE.finditer(text):
        before = text[m.start() - 1] if m.start() else " "
        after = text[m.end()] if m.end() < n else " "
        d = _delimiter(m.group(), before, after)
        if d is not None:
            parts += [text[last:m.start()], d]
            delims.append(d)
            last = m.end()
    if not delims:
        return text
    parts.append(text[last:])
    prev = list(range(-1, len(delims) - 1))
    nxt = [*range(1, len(delims)), -1]

    def unlink(k: int) -> None:
        if prev[k] != -1:
            nxt[prev[k]] = nxt[k]
        if nxt[k] != -1:
            prev[nxt[k]] = prev[k]

    bottoms: dict[tuple[str, bool, int], int] = {}
    closer = 0
    while closer != -1:
        d = delims[closer]
        if not d.can_close:
            closer = nxt[closer]
            continue
        key = (d.char, d.can_open, d.length % 3)
        bottom = bottoms.get(key, -1)
        opener = prev[closer]
        while opener > bottom:
            o = delims[opener]
            if o.char == d.char and o.can_open:
                odd = (o.can_close or d.can_open) and (o.length + d.length) % 3 == 0 \
                    and not (o.length % 3 == 0 and d.length % 3 == 0)
                if d.char == "~" or not odd:
                    break
            opener = prev[opener]
        if opener > bottom:
            o = delims[opener]
            use = 2 if o.count >= 2 and d.count >= 2 else 1
            tag = "s" if d.char == "~" else ("b" if use == 2 else "i")
            o.count, d.count = o.count - use, d.count - use
            o.opens.append(tag)
            d.closes.append(tag)
            nxt[opener], prev[closer] = closer, opener  # what lay between stays as text
            if o.count == 0:
                unlink(opener)
            if d.count == 0:
                following = nxt[closer]
                unlink(closer)
                closer = following
        else:
            bottoms[key] = prev[closer]
            following = nxt[closer]
            if not d.can_open:
                unlink(closer)
            closer = following
    return "".join(part if isinstance(part, str) else part.html() for part in parts)


class InlineRenderer:
    """Renders one paragraph's inline markdown to HTML.

    Args:
        code_style: The CSS of ``<code>`` (background and font).
        link_colour: The colour of links.
        cites: The source numbers an answer's marks may point at: those marks are ``cite:N`` links.
    """

    def __init__(self, code_style: str, link_colour: str, cites: frozenset[int] = frozenset()) -> None:
        self._code_style = code_style
        self._link_colour = link_colour
        self._cites = cites

    def render(self, text: str, links: bool = True) -> str:
        """Inline markdown of one paragraph as HTML; newlines become breaks."""
        if _MARKUP_RE.search(text) is None:  # most table cells, many lines: nothing to parse
            return html.escape(text, quote=False).replace("\n", "<br/>")
        text = text.replace("\x00", "\ufffd")
        pieces: list[str] = []

        def keep(piece: str) -> str:
            pieces.append(piece)
            return f"\x00{len(pieces) - 1}\x00"

        out: list[str] = []
        ticks = _Backticks(text) if "`" in text else None
        next_close, next_newline = _NextChar(text, "]"), _NextChar(text, "\n")
        tails: dict[int, re.Match[str] | None] = {}
        pos = done = 0
        while True:
            m = _TRIGGER_RE.search(text, pos)
            if m is None:
                break
            start, token = m.start(), m.group()
            end, piece = self._token(text, start, token, ticks, next_close, next_newline, tails, links)
            if piece is None:
                pos = m.end()  # not markup: the characters stay text
                continue
            out += [html.escape(text[done:start], quote=False), keep(piece)]
            pos = done = end
        out.append(html.escape(text[done:], quote=False))
        body = _emphasis("".join(out))
        body = _PLACEHOLDER_RE.sub(lambda m: pieces[int(m.group(1))], body)
        return body.replace("\n", "<br/>")

    def _token(self, text: str, start: int, token: str, ticks: _Backticks | None,
               next_close: Callable[[int], int], next_newline: Callable[[int], int],
               tails: dict[int, re.Match[str] | None], links: bool) -> tuple[int, str | None]:
        """What starts at ``start``: (its end, its HTML), or (_, None) when it is plain text."""
        c = token[0]
        if c == "\\":
            return start + 2, html.escape(token[1], quote=False)
        if c == "`":
            close = ticks.closing(len(token), start + len(token)) if ticks else -1
            if close == -1:
                return 0, None
            code = text[start + len(token):close].replace("\n", " ").strip()
            return close + len(token), (f'<code style="{self._code_style}">'
                                        f"{html.escape(code, quote=False)}</code>")
        if c in "![":
            return self._link(text, start, token == "![", next_close, next_newline, tails, links)
        if c == "<":
            auto = _AUTO_RE.match(text, start)
            return (0, None) if auto is None else (auto.end(), self._anchor(auto.group("url"), None, links))
        bare = _BARE_RE.match(text, start)
        return (0, None) if bare is None else (bare.end(), self._anchor(bare.group(), None, links))

    def _link(self, text: str, start: int, image: bool, next_close: Callable[[int], int],
              next_newline: Callable[[int], int], tails: dict[int, re.Match[str] | None],
              links: bool) -> tuple[int, str | None]:
        label_start = start + (2 if image else 1)
        close = next_close(label_start)
        newline = next_newline(label_start)
        if close == -1 or -1 < newline < close:
            return 0, None
        if close not in tails:  # every `[` before this `]` shares the same tail: try it once
            tails[close] = _LINK_TAIL_RE.match(text, close + 1)
        tail = tails[close]
        if tail is None:
            return (0, None) if image else self._mark(text, start, links)
        label, url = text[label_start:close], tail.group("url")
        if not links or not is_safe_url(url):
            return tail.end(), html.escape(text[start:tail.end()], quote=False)
        shown = f"[image: {html.escape(label, quote=False)}]" if image else self.render(label, links=False)
        return tail.end(), self._anchor(url, shown, links)

    def _mark(self, text: str, start: int, links: bool) -> tuple[int, str | None]:
        """A citation mark at ``start`` ("[2]", "[1, 3]") with its numbers that point at a source as
        ``cite:N`` links; (_, None) when it is no mark or points at no source."""
        if not self._cites or not links or (start and (text[start - 1].isalnum() or text[start - 1] in "_[")):
            return 0, None
        m = _MARK_RE.match(text, start + 1)
        if m is None:
            return 0, None
        parts = _MARK_PARTS_RE.split(m.group()[:-1])  # separators at even places, numbers at odd ones
        if not any(int(p) in self._cites for p in parts[1::2]):
            return 0, None
        style = f"color:{self._link_colour}"
        if len(parts) == 3:  # one number: the whole mark is the link
            return m.end(), f'<a href="{CITE_SCHEME}:{int(parts[1])}" style="{style}">[{parts[1]}]</a>'
        shown = [html.escape(p, quote=False) if i % 2 == 0 or int(p) not in self._cites
                 else f'<a href="{CITE_SCHEME}:{int(p)}" style="{style}">{p}</a>' for i, p in enumerate(parts)]
        return m.end(), "[" + "".join(shown) + "]"

    def _anchor(self, url: str, label_html: str | None, links: bool) -> str:
        shown = html.escape(url, quote=False) if label_html is None else label_html
        if not links or not is_safe_url(url):
            return shown
        return f'<a href="{html.escape(url, quote=True)}" style="color:{self._link_colour}">{shown}</a>'
