"""Where a message's rich text stops: the first part of a long text is rendered, the rest is folded.

Qt's rich text costs the GUI thread time and memory in proportion to what it shows: a 64-column
table of 10,000 rows (1.3 MB) took 12.5 s to insert and 7 s to lay out, and +2 GB; a 4 MB line
0.9 s + 4.5 s and +2 GB (issue 33). So a message renders at most SHOWN_COST of its source as rich
text and folds the rest: the message view says how much is folded and shows the whole text, on
request, in a plain-text viewer (``ui/chat/transcript/full_text.py``), whose cost does not grow so.

The cost of a text is its characters plus what Qt pays beyond them: CELL_COST for every ``|`` (a
table cell) and LINE_COST for every line break (a block or a list item). The cut depends on the
source only, never on how it arrived: the longest prefix whose cost fits the budget, then the line
in progress to its end, for at most SLACK more (so a table ends on a whole row and a paragraph on
a whole line, while one endless line is still cut). A :class:`Fold` is fed the source as it
streams, or all at once, and gives back what to show of each piece; once the budget is spent a
piece costs one C-speed count of its line breaks (for the words under the message).
"""

from __future__ import annotations

SHOWN_COST = 10_000  # the most a message's rich text may cost (see the module docstring)
CELL_COST = 40  # a table cell: Qt inserts and lays one out in the time of ~40 characters of a line
LINE_COST = 8  # a line break: a block, a list item or a line of code
SLACK = 3_000  # at most this much more cost to end the line the budget ran out in (a row of 64 cells)


def cost(text: str) -> int:
    """What showing ``text`` as rich text costs, in characters of prose."""
    return len(text) + CELL_COST * text.count("|") + LINE_COST * text.count("\n")


def fit(text: str, budget: int) -> int:
    """The length of the longest prefix of ``text`` that costs at most ``budget``.

    Every character costs at least 1, so it lies within the first ``budget`` characters; the
    search looks at no more of them.
    """
    lo, hi = 0, min(len(text), max(budget, 0))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


class Fold:
    """Splits a streaming source into what is shown and what is folded (see the module docstring).

    Args:
        budget: The cost shown; None: everything is shown.

    Attributes:
        shown: Characters shown so far.
        hidden: Characters folded so far (0: nothing is folded).
        hidden_lines: Line breaks in the folded part.
    """

    def __init__(self, budget: int | None = SHOWN_COST) -> None:
        self._left = budget  # cost left of the budget; None: no budget
        self._slack: int | None = None  # cost left to end the line in progress, once the budget is spent
        self._closed = False  # the cut is made: whatever comes is folded
        self._last = "\n"  # the last character shown ("\n" before the first)
        self.shown = 0
        self.hidden = 0
        self.hidden_lines = 0

    @property
    def folded(self) -> bool:
        """Whether some of the source is folded."""
        return self.hidden > 0

    def feed(self, text: str) -> str:
        """The part of ``text`` (the source's next piece) to show; the rest is counted as folded."""
        if not text:
            return ""
        if self._closed:
            self._hide(text, 0)
            return ""
        if self._left is None:
            return self._show(text)
        if self._slack is None:
            # Every character costs at least 1: a text longer than what is left is not counted whole.
            spend = cost(text) if len(text) <= self._left else self._left + 1
            if spend <= self._left:
                self._left -= spend
                return self._show(text)
            k = fit(text, self._left)
            self._left = 0
            head = self._show(text[:k])
            if self._last == "\n":
                self._closed = True  # the budget ran out at a line's end: the cut is here
                self._hide(text, k)
                return head
            self._slack = SLACK
        else:
            head, k = "", 0
        # The line in progress goes on to its end (its "\n" included), within the slack; every
        # character costs at least 1, so nothing past the slack's length in characters can fit.
        window = text[k : k + self._slack]
        end = window.find("\n")
        line = window[: end + 1] if end >= 0 else window
        j = fit(line, self._slack)
        self._slack -= cost(line[:j])
        head += self._show(line[:j])
        k += j
        if (j and line[j - 1] == "\n") or k < len(text):
            self._closed = True  # the line ended, or the slack ran out before it did
            self._hide(text, k)
        return head

    def _show(self, text: str) -> str:
        if text:
            self.shown += len(text)
            self._last = text[-1]
        return text

    def _hide(self, text: str, start: int) -> None:
        """Fold ``text[start:]`` (counted where it lies: a folded megabyte is not copied)."""
        self.hidden += len(text) - start
        self.hidden_lines += text.count("\n", start)


def folded_words(hidden: int, hidden_lines: int) -> str:
    """What a folded message says of its rest: "1,254,321 more characters on 9,988 more lines not shown"."""
    lines = f" on {hidden_lines:,} more line{'s' if hidden_lines != 1 else ''}" if hidden_lines else ""
    return f"{hidden:,} more character{'s' if hidden != 1 else ''}{lines} not shown"


def break_long_lines(text: str, width: int, run: int = 0) -> tuple[str, int]:
    """``text`` for display with a line break after every ``width`` characters of one line.

    For a viewer that lays out a line whole (a 4 MB line would cost seconds and gigabytes): the
    text itself is not changed, only what is shown. ``run`` is how many characters of the current
    line came before ``text`` (text shown in pieces); returns the display text and the new run.
    Costs C-speed scans unless a line is too long; then a Python loop over the piece's lines.
    """
    lines = text.split("\n")
    if run + len(lines[0]) <= width and max(map(len, lines)) <= width:
        return text, run + len(lines[0]) if len(lines) == 1 else len(lines[-1])
    out: list[str] = []
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
            run = 0
        if run + len(line) > width:
            k = width - run
            out.append(line[:k])
            for j in range(k, len(line), width):
                out.append("\n")
                out.append(line[j : j + width])
            run = (len(line) - k) % width or width
            continue
        out.append(line)
        run += len(line)
    return "".join(out), run
