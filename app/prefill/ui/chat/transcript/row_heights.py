"""Heights of a transcript's rows, with positions in O(log n), and a guess for rows not yet rendered.

The chat view renders only the rows near its viewport; every other row counts with a height,
measured when it was last on screen or estimated from its text. Where a row starts and
which row lies at a given height must not cost the length of the chat, so the heights are
kept in a Fenwick tree (a binary indexed tree): setting one height, the top of a row and
the row at a position are O(log n); appending is O(log n); an edit in the middle rebuilds.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate


class RowHeights:
    """Non-negative heights of rows 0..n-1 and their prefix sums."""

    def __init__(self, heights: Iterable[int] = ()) -> None:
        self._h: list[int] = [max(0, h) for h in map(int, heights)]
        self._build()

    def _build(self) -> None:
        # Node i sums the rows (i - lowbit(i), i]: a difference of two prefix sums.
        prefix = [0, *accumulate(self._h)]
        self._tree = [0] + [prefix[i] - prefix[i - (i & -i)] for i in range(1, len(prefix))]

    def __len__(self) -> int:
        return len(self._h)

    def __getitem__(self, row: int) -> int:
        return self._h[row]

    def set(self, row: int, height: int) -> None:
        """Change one row's height: O(log n)."""
        height = max(0, int(height))
        delta = height - self._h[row]
        if not delta:
            return
        self._h[row] = height
        i, n = row + 1, len(self._h)
        while i <= n:
            self._tree[i] += delta
            i += i & -i

    def append(self, height: int) -> None:
        """Add a row at the end: O(log n)."""
        height = max(0, int(height))
        i = len(self._h) + 1
        # Node i holds the rows (i - lowbit(i), i]: the new row plus rows already summed.
        self._tree.append(height + self.top(i - 1) - self.top(i - (i & -i)))
        self._h.append(height)

    def insert(self, row: int, heights: Iterable[int]) -> None:
        """Insert rows before `row` (at the end: O(k log n); elsewhere the tree is rebuilt)."""
        new = [max(0, int(h)) for h in heights]
        if row == len(self._h):
            for h in new:
                self.append(h)
            return
        self._h[row:row] = new
        self._build()

    def remove(self, first: int, last: int) -> None:
        """Remove rows first..last (inclusive); a tail is cut in O(1), elsewhere the tree is rebuilt."""
        at_end = last + 1 >= len(self._h)
        del self._h[first : last + 1]
        if at_end:
            del self._tree[first + 1 :]  # node i only sums rows <= i: the rest stays valid
        else:
            self._build()

    def top(self, row: int) -> int:
        """The sum of the heights of the rows before `row`: O(log n)."""
        i, total = min(row, len(self._h)), 0
        while i > 0:
            total += self._tree[i]
            i -= i & -i
        return total

    def total(self) -> int:
        return self.top(len(self._h))

    def row_at(self, y: int) -> int:
        """The row whose span [top, top + height) holds `y`, clamped to the rows there are: O(log n).

        Returns -1 when there are no rows.
        """
        n = len(self._h)
        if n == 0:
            return -1
        pos, rest = 0, y
        step = 1 << n.bit_length()
        while step:
            nxt = pos + step
            if nxt <= n and self._tree[nxt] <= rest:
                pos, rest = nxt, rest - self._tree[nxt]
            step >>= 1
        return min(max(pos, 0), n - 1)


def estimate_heights(
    texts: Iterable[str], width: int, line_height: int, char_width: float, chrome: int
) -> list[int]:
    """A guess of each rendered message's height in pixels, from its text alone.

    Cheap enough for thousands of rows at once (a few C-level string scans per text).

    Args:
        texts: The messages' markdown sources.
        width: The width the text wraps in.
        line_height: One line of the body font.
        char_width: The body font's average character width.
        chrome: What a message adds around its text (title bar, margins, figures, spacing).
    """
    per_line = max(20, int(width / max(char_width, 1.0)))
    return [chrome + line_height * (t.count("\n") + 1 + len(t) // per_line) for t in texts]
