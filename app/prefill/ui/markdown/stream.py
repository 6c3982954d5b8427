"""Incremental markdown rendering of a streaming answer into a QTextDocument.

STYLE rule 7: the cost of one flush must not grow with the length of the answer.
A naive view calls ``setHtml(render_markdown(answer))`` per flush, which re-lexes,
re-highlights and re-lays-out everything written so far: quadratic in the answer.

:class:`MarkdownStream` keeps the document in two regions::

    [ committed blocks: rendered once as HTML, never touched again ][ open tail ]

The source is cut into blocks by :class:`~prefill.ui.markdown.rich_text.BlockSplitter` (a blank
line outside a fence, a closed fence, a heading...). When a block completes, the
tail is removed, the block's HTML is inserted at the end of the committed region,
and what is left of the tail is shown again after it. Otherwise the new text is
only added at the end of the tail: plain text, monospace inside an open code fence.
An append thus costs its own text, plus the open block when that block completes.

Qt lays out a whole paragraph again whenever text is added to it, so a tail that
runs on without a newline (a model that never ends its paragraph) would make each
append cost the paragraph's length. While streaming, the shown tail is cut into
display lines of at most SOFT_BREAK characters; the finished block is rendered whole.

While a fence is open, the tail shows its code without the fence line itself: the line that
opened it is markup, and a message's code block names its language in a header of its own.

Should the renderer fail on a block anyway, the whole answer is shown as plain text
from then on (and the failure logged): a message is never lost to a renderer bug.

However long the answer grows, the document holds a bounded part of it: the source passes a
:class:`~prefill.ui.markdown.fold.Fold` first, and what is past its budget is kept in ``text``
but not shown (a finished answer ends with a line saying how much, as ``render_markdown``
does). A message's segments share one budget: its body folds and their streams take no
budget of their own (``ui/chat/transcript/message_segments.py``).
"""

from __future__ import annotations

import logging

from PySide6.QtGui import QTextBlockFormat, QTextCharFormat, QTextCursor, QTextDocument

from prefill.ui.markdown.fold import SHOWN_COST, Fold
from prefill.ui.markdown.rich_text import LIGHT_CODE, BlockRenderer, BlockSplitter, CodePalette, folded_note
from prefill.ui.markdown.text_buffer import MarkdownBuffer

SOFT_BREAK = 600  # characters of tail shown in one Qt block before a display-only line break

_log = logging.getLogger(__name__)


class MarkdownStream:
    """Renders one answer into ``document`` as it streams, block by block.

    Typical use: ``append()`` on every coalesced flush (~30 ms), ``finish()`` when the
    answer ends; ``set_text()`` for a finished answer loaded from history. The
    document's undo stack is switched off: an answer is not edited.

    Args:
        document: The document to render into; it is cleared.
        palette: Code and link colours (light by default); see ``theme.code_palette``.
        budget: What the shown part may cost (``fold.py``); None: all of it is shown.
        cites: The source numbers the answer's citation marks may point at (links to ``cite:N``); a
            change takes effect at the next ``set_text``.
        copy_links: Write a "Copy" link above each code block (``BlockRenderer``).
        line_height: Lines of prose as a multiple of the font's height (1.0: the font's own).
        code_line_height: The same for lines of code.
    """

    def __init__(
        self, document: QTextDocument, palette: CodePalette | None = None, budget: int | None = SHOWN_COST,
        cites: frozenset[int] = frozenset(), copy_links: bool = True, line_height: float = 1.0,
        code_line_height: float = 1.0,
    ) -> None:
        self._document = document
        self.cites = cites
        self._palette = palette or LIGHT_CODE
        self._budget = budget
        self._copy_links = copy_links
        document.setUndoRedoEnabled(False)
        # Rendered blocks take their line height from the document's style sheet, the tail's from these.
        self._prose_block = _spaced(line_height)
        self._code_block = _spaced(code_line_height)
        if line_height != 1.0 or code_line_height != 1.0:
            prose, code = round(line_height * 100), round(code_line_height * 100)
            document.setDefaultStyleSheet(
                f"p, li, blockquote, h1, h2, h3, h4, h5, h6, td, th {{ line-height: {prose}%; }} "
                f"pre {{ line-height: {code}%; }}"
            )
        self._plain = QTextCharFormat()
        self._mono = QTextCharFormat()
        self._mono.setFontFamilies(list(self._palette.mono_fonts))
        self._mono.setFontFixedPitch(True)
        self._source: MarkdownBuffer
        self._shown: MarkdownBuffer
        self._fold: Fold
        self._splitter: BlockSplitter
        self._renderer: BlockRenderer
        self._tail_start: int
        self._tail_run: int
        self._finished: bool
        self._failed: bool
        self._restart()

    @property
    def text(self) -> str:
        """The full markdown source received so far."""
        return self._source.text

    @property
    def code_blocks(self) -> list[str]:
        """Raw code of the fenced blocks rendered so far, indexed like the ``copy:N`` links."""
        return list(self._renderer.codes)

    @property
    def finished(self) -> bool:
        """Whether ``finish()`` or ``set_text()`` has rendered the whole answer."""
        return self._finished

    @property
    def plain(self) -> bool:
        """Whether rendering failed and the answer is shown as plain text."""
        return self._failed

    @property
    def palette(self) -> CodePalette:
        """The colours this stream renders with."""
        return self._palette

    @property
    def folded(self) -> int:
        """Characters of the source past the budget, not shown (0: none)."""
        return self._fold.hidden

    def append(self, text: str) -> None:
        """Add newly generated text at the end of the answer.

        After ``finish()`` or ``set_text()`` this re-opens the answer (a continued or
        regenerated message): one full render, then incremental again.
        """
        if not text:
            return
        if self._finished:
            self._reopen(self.text + text)
            return
        self._source.append(text)
        text = self._fold.feed(text)
        if not text:
            return
        self._shown.append(text)
        if self._failed:
            cursor = QTextCursor(self._document)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            self._insert_tail(cursor, text, self._plain)
            return
        blocks, cut = self._splitter.feed(text)
        if blocks or cut:
            self._commit(blocks, final=False)
        else:
            cursor = QTextCursor(self._document)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            self._insert_tail(cursor, text)

    def _insert_tail(self, cursor: QTextCursor, text: str, fmt: QTextCharFormat | None = None) -> None:
        """Show tail text at the cursor, breaking the display (not the source) every SOFT_BREAK chars."""
        fmt = fmt or self._tail_format()
        run = self._tail_run
        for i, line in enumerate(text.split("\n")):
            if i:
                cursor.insertText("\n", fmt)
                run = 0
            while run + len(line) > SOFT_BREAK:
                k = SOFT_BREAK - run
                cursor.insertText(line[:k], fmt)
                cursor.insertBlock(self._tail_block(), fmt)
                line, run = line[k:], 0
            if line:
                cursor.insertText(line, fmt)
                run += len(line)
        self._tail_run = run

    def finish(self) -> None:
        """Render the open tail as markdown: the document now equals a one-shot render."""
        if not self._finished:
            self._commit(self._splitter.close(), final=True)
            self._finished = True

    def set_text(self, text: str) -> None:
        """Replace the answer with ``text``, rendered in full and finished."""
        self._restart()
        self._source.append(text)
        text = self._fold.feed(text)
        self._shown.append(text)
        blocks, _ = self._splitter.feed(text)
        self._commit(blocks + self._splitter.close(), final=True)
        self._finished = True

    def _reopen(self, text: str) -> None:
        """Render ``text`` from scratch as an answer still streaming."""
        self._restart()
        if text:
            self.append(text)

    def _restart(self) -> None:
        self._source = MarkdownBuffer()
        self._shown = MarkdownBuffer()  # what passed the fold
        self._fold = Fold(self._budget)
        self._splitter = BlockSplitter()
        self._renderer = BlockRenderer(self._palette, cites=self.cites, copy_links=self._copy_links)
        self._tail_start = 0
        self._tail_run = 0  # characters shown since the tail's last line break
        self._finished = False
        self._failed = False
        self._document.clear()
        QTextCursor(self._document).setBlockFormat(self._prose_block)

    def _tail_format(self) -> QTextCharFormat:
        return self._mono if self._splitter.in_fence else self._plain

    def _tail_block(self) -> QTextBlockFormat:
        return self._code_block if self._splitter.in_fence else self._prose_block

    def _commit(self, blocks: list[str], final: bool) -> None:
        """Replace the tail by the HTML of ``blocks``, then show the new tail after it."""
        if self._failed:
            return
        try:
            html = "".join(map(self._renderer.render, blocks))
            if final:
                html += folded_note(self._fold)
        except Exception:  # noqa: BLE001 - logged; the answer is shown as written instead
            _log.exception("markdown rendering failed; showing the message as plain text")
            self._show_plain()
            return
        cursor = QTextCursor(self._document)
        cursor.beginEditBlock()
        cursor.setPosition(self._tail_start)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        if html:
            if self._tail_start > 0:
                # Qt merges the first inserted block into the empty tail block and keeps that
                # block's format (a heading would lose its level): give it a one-space paragraph
                # to merge, then drop that block.
                cursor.insertHtml("<p>&nbsp;</p>" + html)
                drop = QTextCursor(self._document)
                drop.setPosition(self._tail_start - 1)
                drop.setPosition(self._tail_start + 1, QTextCursor.MoveMode.KeepAnchor)
                drop.removeSelectedText()
            else:
                cursor.insertHtml(html)
        if final:
            if not html and self._tail_start > 0:
                cursor.deletePreviousChar()  # the empty block that was waiting for a tail
        else:
            if html:
                cursor.insertBlock(self._tail_block(), QTextCharFormat())
            elif cursor.block().length() == 1:
                cursor.setBlockFormat(self._tail_block())  # the empty tail block: code or prose now
            self._tail_start = cursor.position()
            self._tail_run = 0
            tail = self._splitter.tail
            if self._splitter.in_fence:
                tail = tail.partition("\n")[2]  # the fence line is markup: the code shows alone
            self._insert_tail(cursor, tail)
        cursor.endEditBlock()

    def _show_plain(self) -> None:
        """Show the whole answer as plain text, now and for what is appended later."""
        self._failed = True
        self._document.clear()
        self._tail_start = self._tail_run = 0
        self._insert_tail(QTextCursor(self._document), self._shown.text, self._plain)


def _spaced(line_height: float) -> QTextBlockFormat:
    """A block format whose lines are ``line_height`` times the font's height."""
    block = QTextBlockFormat()
    if line_height != 1.0:
        block.setLineHeight(line_height * 100, QTextBlockFormat.LineHeightTypes.ProportionalHeight.value)
    return block
