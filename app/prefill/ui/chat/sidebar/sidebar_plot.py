"""The sidebar's writing-speed plot: tokens per second against the seconds since the message was sent."""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from prefill.engine.events import MetricsSnapshot

EMPTY_TEXT = "The writing speed is drawn here\nwhile an answer is written."


class RatePlot(QWidget):
    """Decode tokens/s over one answer, a step per metrics snapshot, with a time axis and a tok/s scale.

    The first token arrives at the TTFT, so even an answer with a single snapshot (a short one, or a
    stored answer's figures) draws a segment: its rate from the first token to the last.
    """

    MAX_POINTS = 240

    def __init__(self) -> None:
        super().__init__()
        # (start ms, end ms, tokens/s) of each interval between snapshots, in the request's time
        self.segments: list[tuple[float, float, float]] = []
        self.setMinimumHeight(110)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._last: tuple[float, int] | None = None  # (time_ms, completion_tokens) of the last snapshot

    @property
    def points(self) -> list[float]:
        """The rate of each interval, in order."""
        return [rate for _, _, rate in self.segments]

    def reset(self) -> None:
        self.segments, self._last = [], None
        self.update()

    def add_snapshot(self, m: MetricsSnapshot) -> None:
        if m.completion_tokens < 1 or m.decode_tps <= 0:
            return
        t = m.ttft_ms + (m.completion_tokens - 1) / m.decode_tps * 1000
        last = self._last if self._last is not None else (m.ttft_ms, 1)  # the first token came at the TTFT
        if t > last[0] and m.completion_tokens > last[1]:
            rate = (m.completion_tokens - last[1]) / (t - last[0]) * 1000
            self.segments = [*self.segments, (last[0], t, rate)][-self.MAX_POINTS:]
            self.update()
        self._last = (t, m.completion_tokens)

    def paintEvent(self, _event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        fm = p.fontMetrics()
        muted = self.palette().placeholderText().color()
        top_rate = _nice_ceiling(max(self.points, default=0.0) * 1.05)
        scale = f"{top_rate:,.0f}"
        left = fm.horizontalAdvance(max(scale, "tok/s", key=len)) + 8
        top = fm.height() * 1.5 + 4  # the unit's line, then half the top value's (centred on the top line)
        plot = QRectF(left, top, self.width() - left - 6, self.height() - top - fm.height() - 6)
        p.setPen(QPen(self.palette().mid().color(), 1))
        p.drawLine(plot.bottomLeft(), plot.bottomRight())
        p.drawLine(plot.bottomLeft(), plot.topLeft())
        p.setPen(muted)
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        p.drawText(QRectF(0, 0, left - 4, fm.height()), right, "tok/s")  # the unit above the scale, off the line
        if not self.segments:
            p.drawText(plot, Qt.AlignmentFlag.AlignCenter, EMPTY_TEXT)
            return
        end_ms = self.segments[-1][1]
        span = max(end_ms, 1.0)
        for value, y in ((top_rate, plot.top()), (0.0, plot.bottom())):
            p.drawText(QRectF(0, y - fm.height() / 2, left - 4, fm.height()), right, f"{value:,.0f}")
        below = plot.bottom() + 2
        p.drawText(QRectF(plot.left(), below, plot.width(), fm.height()), Qt.AlignmentFlag.AlignLeft, "0 s")
        p.drawText(QRectF(plot.left(), below, plot.width(), fm.height()), Qt.AlignmentFlag.AlignRight,
                   f"{end_ms / 1000:.1f} s")

        def at(t_ms: float, rate: float) -> QPointF:
            return QPointF(plot.left() + t_ms / span * plot.width(), plot.bottom() - rate / top_rate * plot.height())

        steps = QPolygonF()
        for start, end, rate in self.segments:
            steps.append(at(start, rate))
            steps.append(at(end, rate))
        p.setPen(QPen(QColor("#3b82f6"), 2))
        p.drawPolyline(steps)


def _nice_ceiling(value: float) -> float:
    """The scale's top: 1, 2 or 5 times a power of ten, at or above `value`."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(float(m * power) for m in (1, 2, 5, 10) if m * power >= value)
