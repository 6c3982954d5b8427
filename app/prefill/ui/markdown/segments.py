"""Cutting a streaming answer into prose and code segments, at its fenced code blocks.

A message is shown as a stack of segments: prose, which wraps to the pane, and each fenced code
block on its own, which scrolls sideways by itself (see ``ui/chat/transcript/message_segments.py``). The
:class:`SegmentRouter` reads the source as it streams and says which segment each new piece of
text belongs to, by the rules the block splitter uses (``rich_text.opening_fence`` and
``closes_fence``), so a code segment holds exactly one of the splitter's fence blocks.

Each piece is routed once: the cost of a feed is its own text. A line that may still turn out to
open a fence (spaces, then backticks or tildes) is held back until its end is known, so it never
has to be taken back from a prose segment; any other text is passed on as it arrives. The cut
does not depend on how the source is chunked.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefill.ui.markdown.rich_text import closes_fence, opening_fence

_Out = list[tuple[int, bool, list[str]]]  # pieces being gathered: index, code, parts

# How far the start of the current line has been read, while it may still open a fence.
_SPACES, _RUN, _INFO, _DECIDED = range(4)


@dataclass(frozen=True)
class Piece:
    """Text for segment ``index`` (0, 1, …; a new index starts a new segment), code or prose."""

    index: int
    code: bool
    text: str


def _pieces(out: _Out) -> list[Piece]:
    return [Piece(index, code, "".join(parts)) for index, code, parts in out]


class SegmentRouter:
    """Says where each piece of a streaming markdown source goes: which segment, code or prose.

    Segment 0 is prose and always exists (it stays empty when the answer opens with a fence). A
    prose segment after a code block starts only with text that is not blank: the blank lines
    between blocks render nothing, so they make no empty segment.
    """

    def __init__(self) -> None:
        self._index = 0
        self._fence: str | None = None  # the open code block's fence
        self._prose_open = True  # whether the current prose segment exists yet
        self._gap: list[str] = []  # blank text waiting for the next prose segment
        self._line: list[str] = []  # the current line so far, while it is held or inside a fence
        self._held = False  # the current line is held back: it may open a fence
        self._scan = _SPACES  # how far the current line's start has been read (outside a fence)
        self._char, self._run = "", 0  # the fence character and its run, while scanning

    @property
    def index(self) -> int:
        """The segment text goes to now."""
        return self._index

    def feed(self, text: str) -> list[Piece]:
        """Route newly arrived source text; returns the pieces in order."""
        out: _Out = []
        start = 0
        while start < len(text):
            end = text.find("\n", start)
            end = len(text) if end < 0 else end + 1
            self._take(text[start:end], out)
            start = end
        return _pieces(out)

    def close(self) -> list[Piece]:
        """The end of the source: a line still held back is routed as it stands."""
        out: _Out = []
        if self._held:
            self._end_line("".join(self._line), out)
        return _pieces(out)

    def _take(self, piece: str, out: _Out) -> None:
        """A piece of one line (ending with its newline when it completes the line)."""
        ends = piece.endswith("\n")
        if self._fence is not None:
            self._emit(piece, True, out)
            self._line.append(piece)
            if ends:
                line, self._line = "".join(self._line), []
                if closes_fence(line[:-1], self._fence):
                    self._fence = None  # the prose after it starts a new segment
                self._new_line()
            return
        if self._scan != _DECIDED:
            self._read_start(piece[:-1] if ends else piece)
            if self._scan == _DECIDED and self._held:
                # It cannot open a fence after all: what was held goes out with this piece.
                piece, self._line, self._held = "".join(self._line) + piece, [], False
            elif self._scan != _DECIDED:
                self._held = True
        if self._held:
            self._line.append(piece)
            if ends:
                self._end_line("".join(self._line), out)
            return
        self._prose(piece, out)
        if ends:
            self._new_line()

    def _end_line(self, line: str, out: _Out) -> None:
        """A held line is complete (or the source ended): it opens a fence or it is prose."""
        self._line, self._held = [], False
        fence = opening_fence(line.removesuffix("\n"))
        if fence is None:
            self._prose(line, out)
        else:
            self._fence = fence
            self._gap, self._prose_open = [], False  # blank lines before a fence render nothing
            self._index += 1
            self._emit(line, True, out)
            self._line = [] if line.endswith("\n") else [line]
        self._new_line()

    def _new_line(self) -> None:
        self._scan, self._char, self._run = _SPACES, "", 0

    def _read_start(self, text: str) -> None:
        """Read the line's start further: can it still open a fence (``opening_fence``'s rule)?"""
        for i, ch in enumerate(text):
            if self._scan == _SPACES:
                if ch == " ":
                    continue
                if ch in "`~":
                    self._scan, self._char, self._run = _RUN, ch, 1
                else:
                    self._scan = _DECIDED
                    return
            elif self._scan == _RUN:
                if ch == self._char:
                    self._run += 1
                    continue
                if self._run < 3:
                    self._scan = _DECIDED
                    return
                self._scan = _INFO
            if self._scan == _INFO:
                # A backtick fence's line holds no other backtick; a tilde fence's holds anything.
                if self._char == "`" and "`" in text[i:]:
                    self._scan = _DECIDED
                return

    def _prose(self, text: str, out: _Out) -> None:
        if not self._prose_open:
            if not text.strip():
                self._gap.append(text)
                return
            self._prose_open = True
            self._index += 1
            text, self._gap = "".join(self._gap) + text, []
        self._emit(text, False, out)

    def _emit(self, text: str, code: bool, out: _Out) -> None:
        if out and out[-1][0] == self._index:
            out[-1][2].append(text)
        else:
            out.append((self._index, code, [text]))
