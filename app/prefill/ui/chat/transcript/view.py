"""The chat: the TranscriptModel's rows, with a MessageWidget only for the rows near the viewport.

Opening a conversation of any length costs one screen: every row counts with a height
(measured when it was last shown, estimated from its text otherwise; see row_heights), and
widgets are made only for the rows that meet the viewport, then for a margin above and
below. They are made nearest first (the newest row first on opening), in slices of a few
milliseconds from a timer, so a long render never blocks the event loop for long. Rows that
scroll far away give their widget back.
A flush appends only the new text of the streaming row to its widget, and placing the
widgets costs the rows on screen, so the cost grows neither with the answer nor the chat.

The messages stand in a centred column (``tokens.column_width``, the composer's too): about COLUMN.width
wide, growing with the view up to COLUMN.max_width and shrinking with it (not below COLUMN.min_width while
the view has room), so lines of text keep a readable length at any window size.

While the user has not scrolled up, the view follows the newest text; otherwise the row
at the top of the viewport stays where it is when heights above it change. A question sent goes to
the bottom and follows again, wherever the reader had scrolled. The chat's system prompt stands above
the messages, outside the scrolled area; a chat with no messages says what to do instead of a blank.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPaintEvent, QResizeEvent, QShowEvent
from PySide6.QtWidgets import QAbstractScrollArea, QFrame, QWidget

from prefill.ui.chat.images.image_strip import ImageThumbs
from prefill.ui.chat.transcript.message_widget import MessageWidget
from prefill.ui.chat.transcript.row_heights import RowHeights, estimate_heights
from prefill.ui.chat.transcript.summary_rows import SUMMARY, last_summary
from prefill.ui.chat.transcript.summary_widget import SummaryWidget, mark_folded
from prefill.ui.chat.transcript.system_prompt_row import SystemPromptRow
from prefill.ui.chat.transcript.transcript_model import Roles, TranscriptModel
from prefill.ui.chat.transcript.undo_toast import UndoToast
from prefill.ui.widgets.tokens import COLUMN, SPACE, TYPE, column_width

PAD = SPACE.md  # around the messages
SPACING = SPACE.md  # between two messages (no more than PAD: a row at the top of the viewport shows)
GUTTER = COLUMN.gutter  # at each side of the column, while the view has room for it
MARGIN_SCREENS = 1.0  # rendered above and below the viewport, so a scroll finds them ready
KEEP_SCREENS = 3.0  # widgets further than this from the viewport are given back
SLICE_S = 0.008  # a slice of rendering stops before this, having made at least one row
REGUESS_PX = 40  # a width change that makes the guessed heights be guessed again
STICK_PX = 8  # this close to the bottom counts as following the newest text
CHROME_PX = 48  # a message's footer (actions, figures) and a bubble's margins, for estimates
EMPTY_HINT = "A new chat. Write your message below and press Enter to send it."


class ChatView(QAbstractScrollArea):
    """The transcript, rendered near the viewport only.

    ``live_widget(row)`` is a row's MessageWidget while it is rendered (None otherwise);
    ``scroll_to_row(row)`` brings a row to the top of the viewport.

    Signals:
        message_action(str, int): an action ("copy", "edit", "delete", "regenerate", "branch", "older",
            "newer"…) on a row.
        edit_saved(int, str): the row edited in place (``begin_edit``) was saved with this text.
    """

    message_action = Signal(str, int)
    edit_saved = Signal(int, str)

    def __init__(self, model: TranscriptModel, code_palette: Any = None):
        super().__init__()
        # First: the scroll area's own event filters (its scroll bars) already ask eventFilter about it.
        self.system_row = SystemPromptRow()  # in the scroll area's top margin, above the messages
        self.system_row.setParent(self)
        self.system_row.installEventFilter(self)
        self.model = model
        self.code_palette = code_palette
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.viewport().setObjectName("chat-inner")
        self.verticalScrollBar().setSingleStep(40)
        self.setAccessibleName("Transcript (Page Up and Page Down scroll it)")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # a Tab stop: the keys scroll it
        self._heights = RowHeights()
        self._body_font = QFont(self.font())  # the messages' text, for the guessed heights
        self._body_font.setPixelSize(TYPE.body)
        self._live: dict[int, MessageWidget] = {}
        self._seen: dict[int, int] = {}  # chunks of each live row already given to its widget
        self._seen_thinking: dict[int, int] = {}  # the same for each live row's thinking
        self._width = 0  # the width rows are laid out (and estimated) for
        self._folded = 0  # the rows before this one are folded into the chat's last summary
        self._stick = True
        self._anchor = (0, 0)  # while not sticking: this row's top is this far above the viewport's
        self._placing = False
        self._cost = 0.0  # seconds one widget takes to make, a running average
        self._fill = QTimer(self)
        self._fill.setSingleShot(True)
        self._fill.setInterval(0)
        self._fill.timeout.connect(self._relayout)
        self.toast = UndoToast(self)  # over the bottom of the chat while a delete can be undone
        self.thumbs: ImageThumbs | None = None  # a question's thumbnails, made once (the window sets it)
        model.modelReset.connect(self._on_model_reset)
        model.rowsInserted.connect(self._on_model_rows_inserted)
        model.rowsRemoved.connect(self._on_model_rows_removed)
        model.dataChanged.connect(self._on_model_data_changed)
        self._on_model_reset()

    # --- public ----------------------------------------------------------------------------
    def set_code_palette(self, palette: Any) -> None:
        self.code_palette = palette
        self._drop_live(list(self._live))
        self._relayout()

    def undo_delete(self) -> None:
        """Undo the last delete, while the bar offers it (Ctrl+Z means nothing otherwise)."""
        if self.toast.isVisible():
            self.toast.undo.click()

    def set_system_prompt(self, text: str) -> None:
        """The open chat's system prompt, shown folded above its messages ("" hides it)."""
        self.system_row.set_text(text)
        self._place_system_row()

    def empty_hint(self) -> str:
        """What the empty chat says ("" once it has a message)."""
        return "" if self.model.rowCount() else EMPTY_HINT

    def live_widget(self, row: int) -> MessageWidget | None:
        """The widget of `row` if the row is rendered now (near the viewport), else None."""
        return self._live.get(row)

    def live_rows(self) -> list[int]:
        return sorted(self._live)

    def begin_edit(self, row: int) -> bool:
        """Edit `row` in place (a rendered row: its widget shows an editor). False if it is not rendered."""
        w = self._live.get(row)
        if w is None:
            return False
        w.begin_edit()
        return True

    def holds(self, widget: QWidget) -> bool:
        """Whether `widget` is in the transcript (a message's widget, or a part of one)."""
        return self.viewport().isAncestorOf(widget)

    def shows(self, widget: QWidget) -> bool:
        """Whether `widget`, one the transcript holds, meets the viewport (Tab goes through what is seen)."""
        viewport = self.viewport()
        return QRect(widget.mapTo(viewport, QPoint(0, 0)), widget.size()).intersects(viewport.rect())

    def reveal(self, widget: QWidget) -> None:
        """Scroll the message holding `widget` to the top if it is only partly in view (the button Tab
        reached is then seen)."""
        viewport = self.viewport()
        if viewport.rect().contains(QRect(widget.mapTo(viewport, QPoint(0, 0)), widget.size())):
            return
        for row in self.live_rows():
            message = self.live_widget(row)
            if message is not None and (message is widget or message.isAncestorOf(widget)):
                self.scroll_to_row(row)
                return

    def scroll_to_row(self, row: int) -> None:
        """Bring `row` to the top of the viewport (a search hit), rendering what it needs."""
        if not 0 <= row < self.model.rowCount():
            return
        self._stick = False
        self._anchor = (row, -PAD)
        self._relayout()

    def screen_complete(self) -> bool:
        """Whether every row meeting the viewport is rendered."""
        v, view_h = self.verticalScrollBar().value(), self.viewport().height()
        return (
            all(r in self._live for r in self._rows_between(v, v + view_h))
            if self._live
            else self.model.rowCount() == 0
        )

    def row_at_top(self) -> int:
        """The row at the top of the viewport, below its padding (-1 with no rows)."""
        return self._heights.row_at(self.verticalScrollBar().value())

    # --- following the model -------------------------------------------------------------
    def _on_model_reset(self) -> None:
        self._drop_live(list(self._live))
        self._width = self._text_width()
        self._heights = RowHeights(self._estimate(r.content for r in self.model.rows()))
        self._update_folded()
        self._stick = True
        self.viewport().update()  # the empty chat's hint comes or goes
        # Rendered from the event loop: a scroll_to_row() right after the reset (a search hit)
        # then renders only where it lands, not the end first.
        self._fill.start()

    def _on_model_rows_inserted(self, _parent: QModelIndex, first: int, last: int) -> None:
        count = last - first + 1
        self._shift_live(first, count)
        self._heights.insert(
            first, self._estimate(self.model.row(r).content for r in range(first, last + 1))
        )
        if not self._stick and self._anchor[0] >= first:
            self._anchor = (self._anchor[0] + count, self._anchor[1])
        if last == self.model.rowCount() - 1 and any(
                self.model.row(r).role == "user" for r in range(first, last + 1)):
            self._stick = True  # a question sent: show it and its answer, even when scrolled up
        if first == 0 and last == self.model.rowCount() - 1:
            self.viewport().update()
        self._update_retry()
        self._update_folded()
        self._relayout()

    def _on_model_rows_removed(self, _parent: QModelIndex, first: int, last: int) -> None:
        self._drop_live([r for r in self._live if first <= r <= last])
        count = last - first + 1
        self._shift_live(last + 1, -count)
        self._heights.remove(first, last)
        row, offset = self._anchor
        if row > last:
            self._anchor = (row - count, offset)
        elif row >= first:
            self._anchor = (first, 0)
        self._update_retry()
        self._update_folded()
        self._relayout()
        if not self.model.rowCount():
            self.viewport().update()

    def _on_model_data_changed(
        self, top: QModelIndex, bottom: QModelIndex, roles: list[int]
    ) -> None:
        changed = False  # a height out of sight; a live row's widget reports its own (eventFilter)
        refold = False  # a summary was written: the rows before it fold
        for row in range(top.row(), bottom.row() + 1):
            w, r = self._live.get(row), self.model.row(row)
            refold = refold or (r.role == SUMMARY and (not roles or Roles.STREAMING in roles))
            if w is None:
                # A streaming row out of sight keeps its height until it ends: estimating it
                # per flush would cost the answer's length.
                if (not roles or Roles.CONTENT in roles) and not r.streaming:
                    self._heights.set(row, self._estimate([r.content])[0])
                    changed = True
                continue
            if not roles or Roles.REASONING in roles:
                if r.streaming:
                    text, self._seen_thinking[row] = self.model.reasoning_since(row, self._seen_thinking[row])
                    w.append_reasoning(text)
                else:
                    text, self._seen_thinking[row] = self.model.reasoning_since(row, 0)
                    w.set_reasoning(text)
            if not roles or Roles.SOURCES in roles:  # before the text: a text set with them renders once
                w.set_sources(r.sources, render=bool(roles) and Roles.CONTENT not in roles)
            if not roles or Roles.CONTENT in roles:
                if r.streaming:
                    text, self._seen[row] = self.model.chunks_since(row, self._seen[row])
                    w.append(text)
                else:
                    text, self._seen[row] = self.model.chunks_since(row, 0)
                    w.set_content(text)
            if not roles or Roles.STREAMING in roles:
                w.set_streaming(r.streaming)
                if not r.streaming:
                    w.finish()
            if not roles or Roles.FIGURES in roles or Roles.FINISH_REASON in roles:
                w.set_figures(r.figures, r.finish_reason)
            if not roles or Roles.VERSION in roles or Roles.VERSIONS in roles:
                w.set_versions(r.version, r.versions)
        if refold:
            self._update_folded()
        if changed:
            self._relayout()

    def _on_widget_action(self, name: str, widget: MessageWidget) -> None:
        row = self._row_of(widget)
        if row >= 0:
            if name == "copy":
                widget.copy_text()
            self.message_action.emit(name, row)

    def _row_of(self, widget: object) -> int:
        """The row a live message widget shows (-1: none)."""
        return next((r for r, w in self._live.items() if w is widget), -1)

    def _on_widget_edit_saved(self, text: str, widget: MessageWidget) -> None:
        row = self._row_of(widget)
        widget.end_edit()
        if row >= 0:
            self.edit_saved.emit(row, text)

    # --- widgets for the rows near the viewport --------------------------------------------
    def _make_widget(self, row: int) -> MessageWidget:
        r = self.model.row(row)
        w = SummaryWidget(self.code_palette) if r.role == SUMMARY else MessageWidget(r.role, self.code_palette)
        w.setParent(self.viewport())
        w.action.connect(self._on_widget_action)
        w.edit_saved.connect(self._on_widget_edit_saved)
        text, n = self.model.chunks_since(row, 0)
        thinking, n_thinking = self.model.reasoning_since(row, 0)
        w.set_reasoning(thinking, from_history=not r.streaming)
        if r.sources:
            w.set_sources(r.sources, render=False)
        if r.streaming:
            w.append(text)
            w.set_streaming(True)
        else:
            w.set_content(text)
        w.set_figures(r.figures, r.finish_reason)
        w.set_versions(r.version, r.versions)
        if r.images and self.thumbs is not None:
            w.set_images(r.images, self.thumbs)
        w.set_retry_visible(row == self._unanswered_row())
        mark_folded(w, row < self._folded)
        w.setGeometry(self._left(), 0, self._width, max(1, self._heights[row] - SPACING))
        w.show()
        w.installEventFilter(self)
        self._live[row] = w
        self._seen[row] = n
        self._seen_thinking[row] = n_thinking
        self._measure(row, w)
        return w

    def _unanswered_row(self) -> int:
        """The last question, when nothing answered it (its answer failed): it offers Retry. -1: none."""
        row = self.model.rowCount() - 1
        while row >= 0 and self.model.row(row).role in ("notice", "tool"):
            row -= 1
        return row if row >= 0 and self.model.row(row).role == "user" else -1

    def _update_retry(self) -> None:
        unanswered = self._unanswered_row()
        for row, w in self._live.items():
            w.set_retry_visible(row == unanswered)

    def _update_folded(self) -> None:
        """Dim the rows before the chat's last summary (the model reads the summary in their place)."""
        self._folded = max(0, last_summary(self.model.rows()))
        for row, w in self._live.items():
            mark_folded(w, row < self._folded)

    def _measure(self, row: int, w: QWidget) -> None:
        layout = w.layout()
        if layout is not None:
            layout.activate()
        self._heights.set(row, w.sizeHint().height() + SPACING)

    def _drop_live(self, rows: list[int]) -> None:
        for row in rows:
            w = self._live.pop(row)
            self._seen.pop(row, None)
            self._seen_thinking.pop(row, None)
            w.removeEventFilter(self)
            w.hide()
            w.deleteLater()

    def _shift_live(self, start: int, by: int) -> None:
        """Renumber live rows from `start` on by `by` (rows were inserted or removed before them)."""
        moved = {(r + by if r >= start else r): w for r, w in self._live.items()}
        seen = {(r + by if r >= start else r): n for r, n in self._seen.items()}
        thinking = {(r + by if r >= start else r): n for r, n in self._seen_thinking.items()}
        self._live, self._seen, self._seen_thinking = moved, seen, thinking

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.system_row:
            if event.type() in (QEvent.Type.LayoutRequest, QEvent.Type.Show, QEvent.Type.Hide):
                QTimer.singleShot(0, self, self._place_system_row)  # once its layout has settled
            return super().eventFilter(watched, event)
        # A live message asks for a new layout when its text or its sections change height.
        if event.type() == QEvent.Type.LayoutRequest and not self._placing:
            row = self._row_of(watched)
            if row >= 0:
                before = self._heights[row]
                self._measure(row, self._live[row])
                if self._heights[row] != before:
                    self._relayout()
        return super().eventFilter(watched, event)

    # --- placing -----------------------------------------------------------------------------
    def _relayout(self) -> None:
        """Render the rows that meet the viewport, place them, and render a margin in slices."""
        if self._placing:
            return
        self._placing = True
        try:
            self._place()
        finally:
            self._placing = False

    def _place(self) -> None:
        heights, n = self._heights, self.model.rowCount()
        width = self._text_width()
        if width != self._width:
            # Live rows are measured again; the guesses for the rest only when the change is more
            # than a scroll bar coming or going (they are rough anyway): O(n), on a resize only.
            guess = abs(width - self._width) > REGUESS_PX
            self._width = width
            for row, w in self._live.items():
                w.resize(width, w.height())
                self._measure(row, w)
            if guess:
                guesses = self._estimate(r.content for r in self.model.rows())
                self._heights = heights = RowHeights(
                    heights[row] if row in self._live else guesses[row] for row in range(n)
                )
        view_h = self.viewport().height()
        if n:
            # Nearest rows first, in slices: a long first render never blocks the event loop;
            # at least one row per call, so a busy loop still moves on.
            start, made = time.perf_counter(), False
            while todo := self._missing_rows(self._scroll_value(view_h), view_h):
                if made and time.perf_counter() - start + self._cost > SLICE_S:
                    self._fill.start()
                    break
                t = time.perf_counter()
                self._make_widget(todo[0])
                self._cost = 0.8 * self._cost + 0.2 * (time.perf_counter() - t)
                made = True
            v = self._scroll_value(view_h)
            keep = int(view_h * KEEP_SCREENS)
            lo, hi = heights.row_at(v - PAD - keep), heights.row_at(v - PAD + view_h + keep)
            self._drop_live([r for r in self._live if not lo <= r <= hi])
        v = self._scroll_value(view_h) if n else 0
        left = self._left()
        for row, w in self._live.items():
            w.setGeometry(
                left, PAD + heights.top(row) - v, self._width, max(1, heights[row] - SPACING)
            )
        bar = self.verticalScrollBar()
        bar.setRange(0, self._scroll_max(view_h))
        bar.setPageStep(view_h)
        bar.setValue(v)

    def _rows_between(self, y0: int, y1: int) -> range:
        """Rows meeting the content span [y0, y1)."""
        return range(self._heights.row_at(y0 - PAD), self._heights.row_at(y1 - PAD) + 1)

    def _missing_rows(self, v: int, view_h: int) -> list[int]:
        """Rows to render, in order: those on screen (from the bottom while following the newest
        text, else from the top), then those in the margins, nearest the screen first."""
        screen = self._rows_between(v, v + view_h)
        rows = [r for r in (reversed(screen) if self._stick else screen) if r not in self._live]
        if rows:
            return rows
        margin = int(view_h * MARGIN_SCREENS)
        below = [
            r for r in self._rows_between(v + view_h, v + view_h + margin) if r not in self._live
        ]
        above = [r for r in reversed(self._rows_between(v - margin, v)) if r not in self._live]
        for i in range(max(len(above), len(below))):
            rows += [side[i] for side in (above, below) if i < len(side)]
        return rows

    def _content_height(self) -> int:
        return PAD * 2 + max(0, self._heights.total() - SPACING)

    def _scroll_max(self, view_h: int) -> int:
        return max(0, self._content_height() - view_h)

    def _scroll_value(self, view_h: int) -> int:
        top = self._scroll_max(view_h)
        if self._stick:
            return top
        row, offset = self._anchor
        row = min(row, len(self._heights) - 1)
        return min(max(0, PAD + self._heights.top(row) + offset), top)

    def _text_width(self) -> int:
        """The column's width (see ``column_width``)."""
        return column_width(max(1, self.viewport().width() - 2 * PAD))

    def _left(self) -> int:
        """Where the column starts: centred in the viewport."""
        return max(0, (self.viewport().width() - self._width) // 2)

    def _estimate(self, texts: Iterable[str]) -> list[int]:
        fm = QFontMetricsF(self._body_font)
        line = round(fm.lineSpacing() * TYPE.body_line_height)
        return estimate_heights(
            texts, self._width or COLUMN.width, line, fm.averageCharWidth(), CHROME_PX + SPACING
        )

    # --- scrolling and resizing ----------------------------------------------------------------
    def scrollContentsBy(self, _dx: int, _dy: int) -> None:
        if self._placing:
            return
        bar = self.verticalScrollBar()
        v = bar.value()
        self._stick = v >= bar.maximum() - STICK_PX
        row = max(0, self._heights.row_at(v - PAD))
        self._anchor = (row, v - PAD - self._heights.top(row))
        self._relayout()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.toast.place()
        self._place_system_row()
        self._relayout()

    def _place_system_row(self) -> None:
        """The system prompt's row over the top margin it takes from the viewport (none while hidden)."""
        row = self.system_row
        row.set_sides(max(0, (self.width() - column_width(max(1, self.width() - 2 * PAD))) // 2))  # with the column
        height = row.heightForWidth(self.width()) if row.hasHeightForWidth() else row.sizeHint().height()
        height = height if not row.isHidden() else 0
        row.setGeometry(0, 0, self.width(), height)
        if self.viewportMargins().top() != height:
            self.setViewportMargins(0, height, 0, 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        hint = self.empty_hint()
        if hint:  # a new chat: a short, centred sentence in place of a blank pane
            p = QPainter(self.viewport())
            p.setPen(self.palette().placeholderText().color())
            rect = self.viewport().rect().adjusted(2 * PAD, 0, -2 * PAD, 0)
            p.drawText(rect, int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), hint)
            p.end()
        super().paintEvent(event)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._relayout()
