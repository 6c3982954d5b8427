"""The speculation strip: where an answer's tokens came from, one column per metrics snapshot.

Each column is one interval between two snapshots (a quarter of a second while an answer
streams): its height is the tokens written in that interval, split into those that came from an
accepted draft (guessed ahead and confirmed by the model in one step) and those the model decoded
itself, one step each. A snapshot adds one column (O(1) on the GUI thread); the strip keeps the
answer's columns after it ends, until the next answer begins.
"""

from __future__ import annotations

from collections import deque

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QWidget

from prefill.engine.events import MetricsSnapshot
from prefill.ui.widgets.colours import DARK, LIGHT
from prefill.ui.widgets.plain_text import tooltip

TIP = ("Where this answer's tokens came from, a quarter of a second per column (newest on the right).\n"
       "Green: tokens guessed ahead and confirmed by the model in one step (accepted drafts).\n"
       "Blue: tokens the model worked out itself, one step each.\n"
       "Tall green columns are where speculation saved the most time: typically text the answer "
       "copies from the prompt or from itself.")


class DraftStrip(QWidget):
    """Accepted-draft tokens against tokens the model decoded itself, per snapshot interval."""

    MAX_COLUMNS = 160  # the newest are kept (a 40 s answer at 4 snapshots a second)
    LEGEND_H = 14

    def __init__(self, theme: str = "light") -> None:
        super().__init__()
        self.setObjectName("draft-strip")
        self.setMinimumHeight(64)
        self.setToolTip(tooltip(TIP))
        self.columns: deque[tuple[int, int]] = deque(maxlen=self.MAX_COLUMNS)  # (from drafts, decoded itself)
        self._top = 1  # the tallest column since the answer began: the scale
        self._last = (0, 0)  # (completion_tokens, draft_n_accepted) of the last snapshot
        # Accepted tokens counted before they were written: a draft is accepted in one step and its
        # tokens stream out over the next few, so an interval may end between the two.
        self._pending = 0
        self.accepted_colour = QColor()
        self.own_colour = QColor()
        self.set_theme(theme)

    def set_theme(self, effective: str) -> None:
        colours = DARK if effective == "dark" else LIGHT
        self.accepted_colour = QColor(colours.kv_green)
        self.own_colour = QColor(colours.highlight)
        self.update()

    def reset(self) -> None:
        self.columns.clear()
        self._top, self._last, self._pending = 1, (0, 0), 0
        self.update()

    def add_snapshot(self, m: MetricsSnapshot) -> None:
        """One column for the tokens since the last snapshot (none when no token came)."""
        tokens = m.completion_tokens - self._last[0]
        if tokens <= 0:
            return
        self._pending += max(0, m.draft_n_accepted - self._last[1])
        accepted = min(tokens, self._pending)
        self._pending -= accepted
        self._last = (m.completion_tokens, m.draft_n_accepted)
        self.columns.append((accepted, tokens - accepted))
        self._top = max(self._top, tokens)
        self.update()

    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        frame = self.rect().adjusted(2, 2, -2, -2)
        p.setPen(QPen(self.palette().mid().color(), 1))
        p.drawRect(frame)
        self._legend(p, frame.left() + 4, frame.top() + 2)
        area = QRectF(frame.adjusted(3, self.LEGEND_H + 4, -3, -3))
        if not self.columns or area.height() <= 0:
            return
        step = max(2.0, min(10.0, area.width() / len(self.columns)))
        shown = min(len(self.columns), int(area.width() // step))
        gap = 1.0 if step >= 4 else 0.0
        scale = area.height() / self._top
        x = area.right() - step * shown
        p.setPen(Qt.PenStyle.NoPen)
        for i in range(len(self.columns) - shown, len(self.columns)):
            accepted, own = self.columns[i]
            own_h, acc_h = own * scale, accepted * scale
            p.fillRect(QRectF(x, area.bottom() - own_h, step - gap, own_h), self.own_colour)
            p.fillRect(QRectF(x, area.bottom() - own_h - acc_h, step - gap, acc_h), self.accepted_colour)
            x += step

    def _legend(self, p: QPainter, x: int, y: int) -> None:
        metrics = p.fontMetrics()
        for colour, word in ((self.accepted_colour, "from drafts"), (self.own_colour, "decoded")):
            p.fillRect(x, y + 3, 8, 8, colour)
            p.setPen(self.palette().text().color())
            p.drawText(x + 11, y + metrics.ascent(), word)
            x += 11 + metrics.horizontalAdvance(word) + 10
