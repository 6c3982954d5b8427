"""Markdown to safe Qt rich text, for chat answers.

Model output is displayed, never executed. Every character of the source is
escaped before it reaches the HTML; the only markup is what this module writes:
paragraphs, headings, emphasis, code, lists, quotes, tables and links. Links are
clickable only for http, https and mailto (and an answer's citation marks, ``cite:N``,
for the sources it was given: ``inline.py``); images become links to their address
(no ``<img>`` is ever produced, so nothing is fetched). Fenced code blocks are
coloured by Pygments with inline styles and get a ``copy:N`` link above them,
N being the index of the block in the message, the same index as in
:func:`code_blocks` (or, for a view that lays a Copy button over each block, a label line
carrying the anchor ``code-N``: ``copy_buttons``). Tables are rows, not a grid: the column
names in caption type over a hairline, a hairline between rows, no frame.

The source is cut into blocks by :class:`BlockSplitter` and each block is rendered
on its own, so a streaming view can render the completed blocks once and never
again (see ``stream.py``).

The source is hostile input too: rendering takes time linear in it (inline markup:
``inline.py``; no block pattern backtracks over a line), quotes and lists
nest at most MAX_DEPTH levels (deeper ones render flat at the last level), tables
have at most MAX_TABLE_COLUMNS columns, and a source the renderer fails on anyway
is shown as plain text (:func:`plain_html`). What Qt makes of the HTML costs in proportion
to it too, so :func:`render_markdown` renders at most ``fold.SHOWN_COST`` of a source and
says how much more there is (:func:`folded_note`).
"""

from __future__ import annotations

import html
import logging
import re
from functools import lru_cache

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from prefill.ui.markdown.fold import SHOWN_COST, Fold, folded_words
from prefill.ui.markdown.inline import SAFE_SCHEMES, InlineRenderer, is_safe_url
from prefill.ui.widgets.code_palette import DARK_CODE, LIGHT_CODE, CodePalette
from prefill.ui.widgets.tokens import SPACE, TYPE

__all__ = [
    "DARK_CODE", "LIGHT_CODE", "MAX_DEPTH", "SAFE_SCHEMES", "BlockRenderer", "BlockSplitter",
    "CODE_ANCHOR", "CodePalette", "closes_fence", "code_blocks", "fence_language", "folded_note", "highlight_code",
    "is_safe_url",
    "opening_fence", "plain_html", "render_facts", "render_markdown", "split_blocks", "warm_up",
]

MAX_DEPTH = 8  # levels of quotes, and of lists, shown nested; deeper ones render at the last level
MAX_TABLE_COLUMNS = 64  # a wider "table" is a paragraph (rows x columns must stay linear)
CODE_ANCHOR = "code-"  # with ``copy_buttons``: the anchor of code block N's label line is "code-N"

_log = logging.getLogger(__name__)


_FENCE_RE = re.compile(r"^( *)(`{3,}(?=[^`]*$)|~{3,})\s*([^\s`]*)")
_HEADING_RE = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_RULE_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_QUOTE_RE = re.compile(r"^ {0,3}> ?")
_QUOTES_RE = re.compile(r"^(?: {0,3}> ?)+")
_LIST_RE = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_TABLE_SEP_RE = re.compile(r"^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$")
_CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
# After a blank line inside a list: an indented line is a further paragraph of the item above.
_ITEM_PARAGRAPH_RE = re.compile(r"^(?: {2,}|\t)\S")


def _heading(line: str) -> tuple[int, str] | None:
    """A heading line's level and text (its closing ``#`` run removed), or None.

    Parsed by hand: a regex with a lazy text and an optional closing run backtracks
    quadratically over a long line of spaces.
    """
    m = _HEADING_RE.match(line)
    if m is None:
        return None
    text = line[m.end():].strip(" \t")
    bare = text.rstrip("#")
    if not bare:
        text = ""
    elif bare[-1] in " \t":
        text = bare.rstrip(" \t")
    return len(m.group(1)), text


def closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes the code fence ``fence`` (from ``opening_fence``: at least as long, the
    same char): the splitter's rule."""
    s = line.strip()
    return len(s) >= len(fence) and s == fence[0] * len(s)


def opening_fence(line: str) -> str | None:
    """The fence (its run of backticks or tildes) that ``line`` opens, or None: the splitter's rule."""
    m = _FENCE_RE.match(line)
    return m.group(2) if m else None


def fence_language(line: str) -> str:
    """The language a fence line names ("```python" gives "python"; "" when it names none or opens no fence)."""
    m = _FENCE_RE.match(line)
    return m.group(3) if m else ""


class BlockSplitter:
    """Cuts markdown source into completed blocks as it arrives.

    A block ends at a blank line outside a code fence, at a closing fence, before
    an opening fence, and around a heading or a rule. Blank lines between blocks
    are dropped. The cut does not depend on how the source is chunked.

    A list is the exception to the blank line: its items may stand apart (a "loose" list) and an
    item may hold more than one paragraph (indented under it). So a blank line in a list is held,
    and the next line that is not blank decides: another item, or an indented line, continues the
    list's block; anything else ends it there. A list cut at each blank line would render as
    several lists, its items' later paragraphs flush left and the items after them indented as if
    they were a sub-list of the first.
    """

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._partial = ""
        self._fence: str | None = None
        self._done: list[str] = []
        self._cut = False
        self._list = False  # the open block holds a list item: a blank line may not end it
        self._blank = False  # a blank line was held in the open list block

    @property
    def in_fence(self) -> bool:
        """Whether the open tail is inside a code fence."""
        return self._fence is not None

    @property
    def tail(self) -> str:
        """The source of the open block (not yet completed), with its unfinished line."""
        return "\n".join([*self._lines, self._partial])

    def feed(self, text: str) -> tuple[list[str], bool]:
        """Add source text.

        Returns:
            The blocks it completed, and whether the tail changed other than by
            ``text`` being added at its end (a block was cut or a fence opened).
        """
        if "\n" not in text:
            self._partial += text
            return [], False
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        self._cut = False
        for line in lines:
            self._line(line)
        done, self._done = self._done, []
        return done, self._cut

    def close(self) -> list[str]:
        """End the source: returns the last blocks, an unclosed fence included."""
        if self._partial:
            self._line(self._partial)
            self._partial = ""
        self._flush()
        done, self._done = self._done, []
        self._fence = None
        return done

    def _line(self, line: str) -> None:
        if self._fence is not None:
            self._lines.append(line)
            if closes_fence(line, self._fence):
                self._fence = None
                self._flush()
            return
        blank = not line.strip()
        if self._blank and not blank:
            self._blank = False
            if not (_LIST_RE.match(line) or _ITEM_PARAGRAPH_RE.match(line)):
                self._flush()  # the list ended at the blank line held
        fence = _FENCE_RE.match(line)
        if fence:
            self._flush()
            self._fence = fence.group(2)
            self._lines.append(line)
        elif blank:
            if self._list:
                self._lines.append("")  # held: the next line says whether the list goes on
                self._blank = True
            else:
                self._flush()
        elif _heading(line) is not None or _RULE_RE.match(line):
            self._flush()
            self._lines.append(line)
            self._flush()
        else:
            self._list = self._list or bool(_LIST_RE.match(line))
            self._lines.append(line)

    def _flush(self) -> None:
        self._cut = True
        self._list = self._blank = False
        while self._lines and not self._lines[-1]:
            self._lines.pop()  # the blank lines a list held at its end
        if self._lines:
            self._done.append("\n".join(self._lines))
            self._lines = []


def split_blocks(text: str) -> list[str]:
    """All the blocks of a finished source, in order."""
    splitter = BlockSplitter()
    blocks, _ = splitter.feed(text)
    return blocks + splitter.close()


@lru_cache(maxsize=64)
def _lexer(lang: str) -> Lexer | None:
    if not lang:
        return None
    try:
        return get_lexer_by_name(lang.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=8)
def _formatter(style: str) -> HtmlFormatter:
    return HtmlFormatter(style=style, noclasses=True, nowrap=True)


def highlight_code(code: str, lang: str, palette: CodePalette) -> str:
    """Code as HTML spans with inline colours; escaped plain text for unknown languages."""
    lexer = _lexer(lang)
    if lexer is None:
        return html.escape(code, quote=False)
    coloured: str = highlight(code, lexer, _formatter(palette.pygments_style))
    # Pygments ends the output with a newline the code may not have: Qt would show an empty line.
    return coloured[:-1] if coloured.endswith("\n") and not code.endswith("\n") else coloured


class BlockRenderer:
    """Renders blocks from :class:`BlockSplitter` to HTML, numbering code blocks as it goes.

    Attributes:
        codes: The raw code of every fenced block rendered so far, in order.

    Args:
        cites: The source numbers an answer's citation marks may point at (``inline.py``).
        copy_links: Write the "Copy" link and the language above each code block; False where the
            block is shown with a header of its own (a message's code segment).
        copy_buttons: Instead of the link, a label line (the language, or "code") anchored
            ``code-N``, for a view that lays its own Copy button over it (the model card).
    """

    def __init__(self, palette: CodePalette | None = None, colour_code: bool = True,
                 cites: frozenset[int] = frozenset(), copy_links: bool = True, copy_buttons: bool = False) -> None:
        self._cites = cites
        self._copy_links = copy_links
        self._copy_buttons = copy_buttons
        self.palette = palette or LIGHT_CODE
        self.codes: list[str] = []
        self._colour_code = colour_code

    def render(self, block: str, depth: int = 0) -> str:
        """One block (a string from the splitter) as HTML; ``depth``: the quotes around it."""
        lines = block.split("\n")
        fence = _FENCE_RE.match(lines[0])
        if fence:
            return self._code(lines, fence)
        if len(lines) == 1:
            heading = _heading(lines[0])
            if heading:
                level, text = heading
                if not text:
                    return ""  # Qt drops an empty heading; so does the stream
                return f"<h{level}>{self.inline(text)}</h{level}>"
            if _RULE_RE.match(lines[0]):
                return "<hr/>"
        return self._mixed(lines, depth)

    def inline(self, text: str, links: bool = True) -> str:
        """Inline markdown (code, links, emphasis) of one paragraph; newlines become breaks."""
        return self._inline.render(text, links)

    @property
    def palette(self) -> CodePalette:
        """The colours this renderer writes."""
        return self._palette

    @palette.setter
    def palette(self, palette: CodePalette) -> None:
        self._palette = palette
        code_style = f"background-color:{palette.inline_background}; font-family:{palette.mono_css}"
        self._inline = InlineRenderer(code_style, palette.link, self._cites)

    def _code(self, lines: list[str], fence: re.Match[str]) -> str:
        indent = len(fence.group(1))
        body = lines[1:]
        if body and closes_fence(body[-1], fence.group(2)):
            body.pop()
        code = "\n".join(line[min(indent, len(line) - len(line.lstrip(" "))):] for line in body)
        self.codes.append(code)
        lang, p = fence.group(3), self.palette
        label = f'&nbsp;&nbsp;<span style="color:{p.muted}">{html.escape(lang, quote=False)}</span>'
        coloured = highlight_code(code, lang if self._colour_code else "", p)
        pre = (f'<pre style="background-color:{p.background}; color:{p.foreground}; '
               f'font-family:{p.mono_css}; margin-top:2px">{coloured}</pre>')
        if self._copy_buttons:
            anchor = f"{CODE_ANCHOR}{len(self.codes) - 1}"
            return (f'<p style="margin-top:{SPACE.sm}px; margin-bottom:0px"><a name="{anchor}"></a>'
                    f'<span style="color:{p.muted}; font-size:{TYPE.caption}px">'
                    f'{html.escape(lang[:40] or "code", quote=False)}</span></p>{pre}')
        if not self._copy_links:
            return pre
        return (
            f'<p style="margin-top:8px; margin-bottom:0px"><a href="copy:{len(self.codes) - 1}" '
            f'style="color:{p.link}">Copy</a>{label if lang else ""}</p>{pre}'
        )

    def _mixed(self, lines: list[str], depth: int) -> str:
        """Paragraphs, lists, quotes and tables that follow each other without a blank line."""
        out: list[str] = []
        i, n = 0, len(lines)
        while i < n:
            if _QUOTE_RE.match(lines[i]):
                j = i
                while j < n and _QUOTE_RE.match(lines[j]):
                    j += 1
                # At the last level every further ">" goes too: what is deeper renders flat here,
                # so each line is stripped at most MAX_DEPTH times and the recursion stays shallow.
                marker = _QUOTE_RE if depth + 1 < MAX_DEPTH else _QUOTES_RE
                inner = "\n".join(marker.sub("", line, count=1) for line in lines[i:j])
                quoted = "".join(self.render(b, depth + 1) for b in split_blocks(inner))
                out.append(f'<blockquote style="color:{self.palette.muted}">{quoted}</blockquote>')
            elif _starts_table(lines, i):
                j = i + 2
                while j < n and "|" in lines[j]:
                    j += 1
                out.append(self._table(lines[i:j]))
            elif _LIST_RE.match(lines[i]):
                j = n
                out.append(self._list(lines[i:]))
            else:
                j = i + 1
                while j < n and not _starts_other(lines, j):
                    j += 1
                out.append(f"<p>{self.inline(chr(10).join(s.strip() for s in lines[i:j]))}</p>")
            i = j
        return "".join(out)

    def _table(self, rows: list[str]) -> str:
        aligns = []
        for cell in _cells(rows[1]):
            right, left = cell.endswith(":"), cell.startswith(":")
            aligns.append("center" if left and right else "right" if right else "left")
        p = self.palette
        rule = f"border-bottom:1px solid {p.rule}"
        styles = {"th": f"{rule}; color:{p.muted}; font-size:{TYPE.caption}px; font-weight:600", "td": rule}
        html_rows = []
        for tag, row in [("th", rows[0])] + [("td", row) for row in rows[2:]]:
            cells = [*_cells(row), *[""] * len(aligns)]
            row_html = "".join(f'<{tag} align="{a}" style="{styles[tag]}">{self.inline(c)}</{tag}>'
                               for c, a in zip(cells, aligns, strict=False))
            html_rows.append(f"<tr>{row_html}</tr>")
        return _rows_table("".join(html_rows))

    def _list(self, lines: list[str]) -> str:
        """Nested lists, by indentation; lines without a marker continue the item above.

        An item's further paragraphs (after a blank line the splitter held) stay in the item, a blank
        line between them; the blank lines that only set items apart are dropped.
        """
        items: list[tuple[int, str, list[str]]] = []
        for line in lines:
            m = _LIST_RE.match(line)
            if m:
                items.append((len(m.group(1).expandtabs(4)), m.group(2), [m.group(3)]))
            else:
                items[-1][2].append(line.strip())
        for _, _, text in items:
            while len(text) > 1 and not text[-1]:
                text.pop()
        out: list[str] = []
        stack: list[tuple[int, str]] = []
        for indent, marker, text in items:
            tag = "ul" if marker in "-*+" else "ol"
            if len(stack) >= MAX_DEPTH and indent > stack[-1][0]:
                indent = stack[-1][0]  # too deep: an item of the last level
            while stack and indent < stack[-1][0]:
                out.append(f"</li></{stack.pop()[1]}>")
            if stack and indent == stack[-1][0] and tag != stack[-1][1]:
                out.append(f"</li></{stack.pop()[1]}>")
            if stack and indent == stack[-1][0]:
                out.append("</li>")
            else:
                start = f' start="{int(marker[:-1])}"' if tag == "ol" else ""
                out.append(f"<{tag}{start}>")
                stack.append((indent, tag))
            out.append(f"<li>{self.inline(chr(10).join(text))}")
        out.extend(f"</li></{tag}>" for _, tag in reversed(stack))
        return "".join(out)


def _rows_table(rows: str) -> str:
    """Rows in a table with no frame and no grid (the cells draw their own hairlines)."""
    return (f'<table border="0" cellspacing="0" cellpadding="{SPACE.sm - SPACE.xxs}" '
            f'style="border-collapse:collapse; margin-top:{SPACE.xs}px; margin-bottom:{SPACE.sm}px">{rows}</table>')


def render_facts(facts: tuple[tuple[str, str], ...] | list[tuple[str, str]], palette: CodePalette | None = None) -> str:
    """A card's facts (name, value), plain text from outside, as rows: the name muted in caption type.

    Every character is escaped: nothing in a value is read as markup or markdown.
    """
    p = palette or LIGHT_CODE
    rule = f"border-bottom:1px solid {p.rule}"
    rows = "".join(
        f'<tr><td style="{rule}; color:{p.muted}; font-size:{TYPE.caption}px; font-weight:600">'
        f'{html.escape(name[:1].upper() + name[1:], quote=False)}</td>'
        f'<td style="{rule}">{html.escape(value, quote=False)}</td></tr>' for name, value in facts)
    return _rows_table(rows) if rows else ""


def _cells(row: str) -> list[str]:
    row = row.strip().removeprefix("|")
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip() for cell in _CELL_SPLIT_RE.split(row)]


def _starts_table(lines: list[str], i: int) -> bool:
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    return ("|" in lines[i] and "|" in nxt and bool(_TABLE_SEP_RE.match(nxt))
            and len(_cells(nxt)) <= MAX_TABLE_COLUMNS)


def _starts_other(lines: list[str], i: int) -> bool:
    """Whether line i starts a list, quote or table, which ends a paragraph."""
    line = lines[i]
    return bool(_LIST_RE.match(line) or _QUOTE_RE.match(line)) or _starts_table(lines, i)


def plain_html(text: str) -> str:
    """``text`` as HTML that shows it as written: what a message falls back to."""
    return f'<p style="white-space:pre-wrap">{html.escape(text, quote=False)}</p>'


def folded_note(fold: Fold) -> str:
    """The paragraph that ends a folded text ("… 1,254,321 more characters … not shown."), or ""."""
    if not fold.folded:
        return ""
    return f"<p><i>… {folded_words(fold.hidden, fold.hidden_lines)}.</i></p>"


def render_markdown(text: str, palette: CodePalette | None = None, budget: int | None = SHOWN_COST,
                    copy_buttons: bool = False) -> str:
    """Markdown source as HTML for ``QTextDocument.setHtml``; see the module docstring.

    Past ``budget`` (see ``fold.py``; None: no limit) the source is left out and a last paragraph
    says how much. A source the renderer fails on is shown as plain text (and the failure logged).
    ``copy_buttons``: code blocks get an anchored label line, not a Copy link (``BlockRenderer``).
    """
    fold = Fold(budget)
    shown = fold.feed(text)
    renderer = BlockRenderer(palette, copy_buttons=copy_buttons)
    try:
        return "".join(map(renderer.render, split_blocks(shown))) + folded_note(fold)
    except Exception:  # noqa: BLE001 - a renderer bug must not hide the answer; logged
        _log.exception("markdown rendering failed; showing the message as plain text")
        return plain_html(shown) + folded_note(fold)


def code_blocks(text: str) -> list[str]:
    """The raw code of each fenced block, in the order of the ``copy:N`` links."""
    renderer = BlockRenderer(colour_code=False)
    for block in split_blocks(text):
        renderer.render(block)
    return renderer.codes


WARM_LANGUAGES = ("python", "javascript", "typescript", "bash", "c", "cpp", "rust", "go", "java", "json", "html", "sql")


def warm_up(palette: CodePalette | None = None) -> None:
    """Load Pygments' lexers and styles ahead of the first code block (~75 ms the first time).

    Safe to run on a background thread at start-up: it only fills the caches above.
    """
    p = palette or LIGHT_CODE
    for lang in WARM_LANGUAGES:
        highlight_code("x = 1\n", lang, p)
