"""A message's text as a stack of segments: prose that wraps, and code blocks that scroll on their own.

One text browser for a whole message cannot wrap its prose and let a long code line scroll: the
browser scrolls as one, so either the whole message moved sideways or the line was cut. Here each
fenced code block is a browser of its own, unwrapped, with a thin horizontal scroll bar when a line
is wider than the pane; the prose between code blocks wraps. The pane never widens.

Streaming stays O(new text) per flush (STYLE rule 7): ``ui/markdown/segments.py`` routes each new
piece to the last segment or opens the next one, and each segment renders its own part of the
source with a ``MarkdownStream``; a segment left behind is finished once, never touched again. The
body places its segments itself rather than through a box layout, which would lay out every segment
again whenever the last one grows: a segment's change of height moves only the segments below it.

A code block is drawn as a rounded block of its own (the chat's style sheet: ``QTextBrowser#code-block``)
with a header row above the code: the language its fence names and a Copy button that copies exactly
the code and says "Copied" for a moment. The header stands in the browser's top margin, so the block
stays one widget that scrolls sideways as before.

A long message is folded (``ui/markdown/fold.py``): the body cuts the source where its rich-text
budget runs out, before routing, so however long a message grows (a 10,000-row table, a 4 MB
line), its segments hold a bounded text; a bar below them says how much is folded, and its
"Show all" asks for the whole text in a plain-text viewer (``full_text.py``). The source is kept
whole: ``text`` (Copy, the editor, the store) gives every character. A text set at once (a stored
message) is routed a slice at a time, one per turn of the event loop, as if it streamed fast: a
long one never costs the GUI thread its whole render in one go.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QRect, QSizeF, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QFocusEvent, QGuiApplication, QResizeEvent, QTextCursor
from PySide6.QtWidgets import QFrame, QHBoxLayout, QSizePolicy, QTextBrowser, QTextEdit, QToolButton, QWidget

from prefill.ui.markdown.fold import Fold, fit, folded_words
from prefill.ui.markdown.rich_text import code_blocks, fence_language
from prefill.ui.markdown.segments import Piece, SegmentRouter
from prefill.ui.markdown.stream import MarkdownStream
from prefill.ui.markdown.text_buffer import MarkdownBuffer
from prefill.ui.widgets.copy_button import CopyConfirm, icon_button
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import SPACE, TYPE

SLICE_COST = 4_000  # what a text set at once renders per turn of the event loop (``fold.cost``)
CODE_GAP = SPACE.sm  # above and below a code block, between it and the prose
CODE_INSET = SPACE.sm  # the code's sides and bottom inside its rounded block (clear of the corners)
DOC_MARGIN = SPACE.xxs  # around a segment's text
LANGUAGE_CHARS = 40  # a fence's language longer than this is cut (it is the model's text)
COPY_CODE_TIP = "Copy the code"

# A thin bar that reads on both themes (grey over the message's own background).
_BAR_STYLE = (
    "QScrollBar:horizontal { background: transparent; height: 10px; margin: 0; border: none; }"
    "QScrollBar::handle:horizontal { background: rgba(128, 128, 128, 0.6); border-radius: 4px; min-width: 24px; }"
    "QScrollBar::add-line:horizontal, QScrollBar::sub-line:horizontal { width: 0; border: none; }"
    "QScrollBar::add-page:horizontal, QScrollBar::sub-page:horizontal { background: transparent; }"
)


class SafeBrowser(QTextBrowser):
    """Shows a message's text; loads nothing (no images, no files, no network), opens links only on a click.

    Its height is fitted to its text (and its horizontal scroll bar, when it shows one): it never
    scrolls up and down, the chat does.

    Signals:
        link_clicked(QUrl): a link in the text was clicked.
        fitted(): its height was fitted to its text again, and changed.
    """

    link_clicked = Signal(QUrl)
    fitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # Prose wraps, so only what cannot wrap (a wide table) ever shows this bar.
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.horizontalScrollBar().rangeChanged.connect(lambda _lo, _hi: self._fit_height())
        self.horizontalScrollBar().setStyleSheet(_BAR_STYLE)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.anchorClicked.connect(self.link_clicked)
        self.document().documentLayout().documentSizeChanged.connect(self._on_document_size_changed)
        self.document().setDocumentMargin(DOC_MARGIN)

    def loadResource(self, type: int, name: QUrl | str) -> Any:
        return None  # never fetch what a model's answer points at

    def _on_document_size_changed(self, _size: QSizeF) -> None:
        self._fit_height()

    def _fit_height(self) -> None:
        bar = self.horizontalScrollBar()
        margins = self.viewportMargins()
        extra = (bar.sizeHint().height() if bar.maximum() > 0 else 0) + margins.top() + margins.bottom()
        height = int(self.document().size().height()) + 4 + extra
        if height != self.maximumHeight() or height != self.minimumHeight():
            self.setFixedHeight(height)
            self.fitted.emit()


class CodeHeader(QWidget):
    """The row above a code block: the language it is written in, and Copy (which says "Copied")."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("code-header")
        self.language = plain_label()
        self.language.setObjectName("code-language")
        self.language.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.copy = icon_button("copy", COPY_CODE_TIP, "Copy", "code-copy")
        self.copy.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.copied = CopyConfirm(self.copy, COPY_CODE_TIP)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(CODE_INSET + DOC_MARGIN, SPACE.xxs, SPACE.xs, 0)  # the label over the code
        lay.addWidget(self.language, 1)
        lay.addWidget(self.copy)
        self.set_language("")

    def set_language(self, language: str) -> None:
        """The language the fence names ("" shows "code")."""
        shown = language[:LANGUAGE_CHARS] + ("…" if len(language) > LANGUAGE_CHARS else "")
        self.language.setText(shown or "code")
        self.copy.setToolTip(COPY_CODE_TIP if not language else f"{COPY_CODE_TIP} ({shown})")
        self.copied.tip = self.copy.toolTip()
        self.copy.setAccessibleName(self.copied.tip)


class Segment(SafeBrowser):
    """One segment of a message: prose (wrapped) or one fenced code block (unwrapped, scrolled sideways).

    Attributes:
        index: Its place in the message (0: the first).
        code: Whether it shows a code block.
        stream: Renders its part of the message's source into its document.
        header: A code block's header row (language and Copy); None for prose.
    """

    def __init__(self, index: int, code: bool, palette: Any, parent: QWidget | None = None,
                 cites: frozenset[int] = frozenset()) -> None:
        super().__init__(parent)
        self.header: CodeHeader | None = None
        self.index = index
        self.code = code
        self._named = False  # a code block's header names its language from the fence's line, once
        if code:
            self.setObjectName("code-block")
            # The line stays whole; the bar under the block scrolls it, the pane keeps its width.
            self.setLineWrapMode(QTextEdit.LineWrapMode.NoWrap)
            self.header = CodeHeader(self)
            self.header.copy.clicked.connect(self.copy_code)
            self.setViewportMargins(CODE_INSET, self.header.sizeHint().height(), CODE_INSET, CODE_INSET)
        else:
            self.setObjectName("message-text")
        # The body folds, not each segment. Its own header copies a code block: no Copy link in the text.
        self.stream = MarkdownStream(
            self.document(), palette, budget=None, cites=cites, copy_links=not code,
            line_height=TYPE.body_line_height, code_line_height=TYPE.code_line_height,
        )

    def code_text(self) -> str:
        """A code block's code as it stands (its fences left out; "" for prose)."""
        if not self.code:
            return ""
        blocks = self.stream.code_blocks or code_blocks(self.stream.text)  # still streaming: not rendered yet
        return blocks[0] if blocks else ""

    def copy_code(self) -> None:
        """Copy exactly the code (a code block's Copy), and say so."""
        QGuiApplication.clipboard().setText(self.code_text())
        if self.header is not None:
            self.header.copied.confirm()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        header = getattr(self, "header", None)  # a resize may come while the base is being made
        if header is not None:
            r = self.contentsRect()
            header.setGeometry(QRect(r.left(), r.top(), r.width(), self.viewportMargins().top()))

    def focusInEvent(self, event: QFocusEvent) -> None:
        # Prose with citation marks is a Tab stop (``MessageBody.set_citations``): arriving by Tab puts the
        # keyboard on its first mark (Shift+Tab: its last), wherever a click left the cursor.
        reason = event.reason()
        super().focusInEvent(event)
        if reason in (Qt.FocusReason.TabFocusReason, Qt.FocusReason.BacktabFocusReason) and self.stream.cites:
            forward = reason == Qt.FocusReason.TabFocusReason
            cursor = QTextCursor(self.document())
            cursor.movePosition(QTextCursor.MoveOperation.Start if forward else QTextCursor.MoveOperation.End)
            self.setTextCursor(cursor)
            self.focusNextPrevChild(forward)

    def append(self, text: str) -> None:
        """Render more of its source (see ``MarkdownStream.append``), staying where it was scrolled to."""
        if self.header is not None and not self._named and text:
            # A code segment's first piece opens with its whole fence line (``SegmentRouter``).
            self._named = True
            self.header.set_language(fence_language(text.partition("\n")[0]))
        at = self.horizontalScrollBar().value()
        self.stream.append(text)
        self._scroll_back(at)

    def finish(self) -> None:
        at = self.horizontalScrollBar().value()
        self.stream.finish()
        self._scroll_back(at)

    def _scroll_back(self, at: int) -> None:
        # Text inserted at the browser's own (hidden) cursor drags it along, and the browser scrolls to
        # keep that cursor in view on its next resize: a block whose last line is long would open
        # scrolled to that line's end. The cursor goes back to the start (unless it holds a selection).
        cursor = self.textCursor()
        if not cursor.hasSelection() and cursor.position():
            self.setTextCursor(QTextCursor(self.document()))
        bar = self.horizontalScrollBar()
        if bar.value() != at:
            bar.setValue(at)


class FoldBar(QWidget):
    """Below a folded message: how much of it is not shown, and a "Show all" button."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("message-fold")
        self.label = plain_label()
        self.label.setObjectName("message-fold-note")
        self.button = QToolButton()
        self.button.setObjectName("message-show-all")
        self.button.setText("Show all")
        self.button.setToolTip("Open the whole message as plain text")
        self.button.setAccessibleName("Show the whole message as plain text")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.button)

    def set_folded(self, hidden: int, hidden_lines: int) -> None:
        self.label.setText(f"… {folded_words(hidden, hidden_lines)} here.")


class MessageBody(QWidget):
    """A message's markdown text, shown as segments stacked top to bottom.

    ``append`` on every flush, ``finish`` when the answer ends, ``set_text`` for a finished message.
    Segment 0 is prose and always there (hidden while empty when the text opens with a code block).
    Past its rich-text budget the text is folded: ``fold_bar`` shows below the segments.

    Signals:
        link_clicked(QUrl, object): a link was clicked, and the ``Segment`` it was clicked in.
        show_all(): the fold bar's "Show all" was clicked.
    """

    link_clicked = Signal(QUrl, object)
    show_all = Signal()

    def __init__(self, palette: Any, name: str, focus_watcher: QObject | None = None) -> None:
        """
        Args:
            palette: The code colours (``theme.code_palette``); None: the light ones.
            name: What a screen reader calls the message ("Assistant: message").
            focus_watcher: Gets every segment's events (the message shows its actions while one has focus).
        """
        super().__init__()
        self._palette = palette
        self._name = name
        self._watcher = focus_watcher
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(0)
        self._placing = False
        self.segments: list[Segment] = []
        self._code_count = 0  # code segments made: a screen reader's "code block N"
        self._source = MarkdownBuffer()
        self._router = SegmentRouter()
        self._fold = Fold()
        self.fold_bar: FoldBar | None = None  # made when the text first folds
        self._finished = False
        # A text set at once: what is shown of it, how far it is routed, and whether to finish after.
        self._pending, self._pending_at, self._finish_when_fed = "", 0, False
        self._feeder = QTimer(self)
        self._feeder.setSingleShot(True)
        self._feeder.setInterval(0)
        self._feeder.timeout.connect(self._feed_pending)
        self._cites: frozenset[int] = frozenset()  # the sources an answer's marks point at
        self._add_segment(False)

    @property
    def text(self) -> str:
        """The full markdown source received so far."""
        return self._source.text

    @property
    def plain(self) -> bool:
        """Whether rendering failed somewhere and that part is shown as plain text."""
        return any(s.stream.plain for s in self.segments)

    @property
    def folded(self) -> int:
        """Characters of the text past the rich-text budget, not shown here (0: none)."""
        return self._fold.hidden

    def code_segments(self) -> list[Segment]:
        """The segments that show a code block, in order."""
        return [s for s in self.segments if s.code]

    def append(self, text: str) -> None:
        """Add newly generated text: it goes to the last segment, or opens the next one."""
        if not text:
            return
        self._feed_pending(all_of_it=True)  # a message continued right after it was set
        if self._finished:
            self._restart(self.text + text)  # a finished message continued: one full render
            return
        self._source.append(text)
        self._route(text)

    def finish(self) -> None:
        """The text is complete: what was held back is routed, every segment rendered in full.

        While a text set at once is still being rendered, it finishes when its last slice is in.
        """
        if self._finished:
            return
        if self._pending:
            self._finish_when_fed = True
            return
        self._apply(self._router.close())
        self.segments[-1].finish()
        self._finished = True

    def set_text(self, text: str) -> None:
        """Replace the text with ``text``, rendered and finished.

        What is shown of it goes in SLICE_COST at a time (``fold.cost``): the first slice now, each
        further one on its own turn of the event loop (``rendering`` until the last), so a long text
        costs the GUI thread a slice at a time, as a streamed one does; a short one renders at once.
        """
        self._restart(text)
        self.finish()

    def set_citations(self, cites: frozenset[int]) -> bool:
        """The source numbers the text's citation marks point at (links to ``cite:N``; a mark pointing
        at none stays text). Takes effect at the next ``set_text``; returns whether they changed."""
        if cites == self._cites:
            return False
        self._cites = cites
        for segment in self.segments:
            segment.stream.cites = cites
            segment.setFocusPolicy(self._focus_policy(segment.code))
        return True

    def _focus_policy(self, code: bool) -> Qt.FocusPolicy:
        # Tab goes from button to button; the text takes the focus on a click (to select some of it). Prose
        # with citation marks is a Tab stop too: Tab then steps through its marks, Enter opens one.
        return Qt.FocusPolicy.StrongFocus if self._cites and not code else Qt.FocusPolicy.ClickFocus

    @property
    def rendering(self) -> bool:
        """Whether a text set at once still has slices to render (see ``set_text``)."""
        return bool(self._pending)

    def _restart(self, text: str) -> None:
        for segment in self.segments[1:]:
            segment.hide()
            segment.deleteLater()
        del self.segments[1:]
        self._code_count = 0
        first = self.segments[0]
        first.stream.set_text("")
        first.show()
        self._place_from(0)
        self._source, self._router, self._finished = MarkdownBuffer(), SegmentRouter(), False
        self._fold = Fold()
        self._pending, self._pending_at, self._finish_when_fed = "", 0, False
        self._feeder.stop()
        if self.fold_bar is not None and not self.fold_bar.isHidden():
            self.fold_bar.hide()
            self._place_from(len(self.segments))
        if text:
            self._source.append(text)
            self._pending = self._fold.feed(text)
            if self._fold.folded:
                self._show_fold()
            self._feed_pending()

    def _route(self, text: str) -> None:
        """Route what the fold shows of ``text``; past the budget, only the fold bar's count changes."""
        shown = self._fold.feed(text)
        if shown:
            self._apply(self._router.feed(shown))
        if self._fold.folded:
            self._show_fold()

    def _feed_pending(self, all_of_it: bool = False) -> None:
        """Route the next slice of a text set at once (or all that is left), then finish if asked."""
        if not self._pending:
            return
        at = self._pending_at
        rest = self._pending[at:]
        n = len(rest) if all_of_it else max(1, fit(rest[: SLICE_COST], SLICE_COST))
        self._apply(self._router.feed(rest[:n]))
        self._pending_at = at + n
        if self._pending_at < len(self._pending):
            self._feeder.start()
            return
        self._feeder.stop()
        self._pending, self._pending_at = "", 0
        if self._finish_when_fed:
            self._finish_when_fed = False
            self.finish()

    def _show_fold(self) -> None:
        bar = self.fold_bar
        if bar is None:
            bar = self.fold_bar = FoldBar(self)
            bar.button.clicked.connect(self.show_all)
            if self._watcher is not None:
                bar.button.installEventFilter(self._watcher)
        bar.set_folded(self._fold.hidden, self._fold.hidden_lines)
        if bar.isHidden():
            bar.show()
            self._place_from(len(self.segments))

    def _apply(self, pieces: list[Piece]) -> None:
        for piece in pieces:
            if piece.index == len(self.segments):
                self._add_segment(piece.code)
            self.segments[piece.index].append(piece.text)

    def _add_segment(self, code: bool) -> None:
        if self.segments:
            self.segments[-1].finish()  # it gets no more text: its last block is rendered now
            if not self.segments[0].stream.text and not self.segments[0].isHidden():
                self.segments[0].hide()  # the text opened with a code block
                self._place_from(0)
        # Made with its parent: made alone and then given one, it costs more the more segments there are.
        segment = Segment(len(self.segments), code, self._palette, self, self._cites)
        segment.setFocusPolicy(self._focus_policy(code))
        self._code_count += code
        segment.setAccessibleName(f"{self._name}, code block {self._code_count}" if code else self._name)
        # Slots that ask which segment sent: no closure per segment (fewer objects for the collector).
        segment.link_clicked.connect(self._on_segment_link_clicked)
        segment.fitted.connect(self._on_segment_fitted)
        if self._watcher is not None:
            segment.installEventFilter(self._watcher)
            if segment.header is not None:
                segment.header.copy.installEventFilter(self._watcher)
        self.segments.append(segment)
        segment.resize(max(1, self.width()), segment.height())
        segment.show()
        self._place_from(len(self.segments) - 1)

    # --- placing: each segment below the one before it, the body as tall as all of them ----------
    def _on_segment_link_clicked(self, url: QUrl) -> None:
        segment = self.sender()
        if isinstance(segment, Segment):
            self.link_clicked.emit(url, segment)

    def _on_segment_fitted(self) -> None:
        segment = self.sender()
        # A segment dropped by set_text (deleted later) may still report: it is no longer placed.
        if isinstance(segment, Segment) and not self._placing and segment in self.segments[segment.index:][:1]:
            self._place_from(segment.index)

    def _place_from(self, first: int) -> None:
        """Move the segments from ``first`` on below the one before it: O(segments moved)."""
        y = 0
        if first > 0:
            before = self.segments[first - 1]
            y = before.y() + (0 if before.isHidden() else before.height() + self._gap_after(before))
        width = max(1, self.width())
        for segment in self.segments[first:]:
            shown = not segment.isHidden()
            if shown and segment.code and y > 0 and not self._gap_after(self.segments[segment.index - 1]):
                y += CODE_GAP  # prose above a code block: a gap between them
            segment.setGeometry(0, y, width, segment.height())
            y += segment.height() + self._gap_after(segment) if shown else 0
        bar = self.fold_bar
        if bar is not None and not bar.isHidden():
            height = bar.sizeHint().height()
            bar.setGeometry(0, y, width, height)
            y += height
        if self.height() != y or self.minimumHeight() != y:
            self.setFixedHeight(y)

    def _gap_after(self, segment: Segment) -> int:
        """The room below a code block, before what follows it (none after the last segment)."""
        return CODE_GAP if segment.code and segment.index < len(self.segments) - 1 else 0

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            # A new width wraps the prose again: every segment is fitted, then all placed once.
            self._placing = True
            try:
                for segment in self.segments:
                    segment.resize(event.size().width(), segment.height())
            finally:
                self._placing = False
            self._place_from(0)
