"""The sidebar's writing-speed plot: tokens per second against the seconds since the message was sent.

Live, a step per metrics snapshot. An answer's curve is kept with its figures (:func:`curve_figure`,
at most :data:`CURVE_STEPS` steps), so a chat opened again draws the same curve; an answer kept
without one draws its average only, dashed, and says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from prefill.engine.events import MetricsSnapshot
from prefill.ui.widgets.colours import colours_for
from prefill.ui.widgets.tokens import SPACE

EMPTY_TEXT = "The writing speed is drawn here while an answer is written."
AVERAGE_TEXT = "average only"  # a stored answer without its curve
CURVE_KEY = "speed_curve"  # an answer's figures: [[start ms, end ms, tok/s], …]
CURVE_STEPS = 60  # the most steps a stored curve keeps (neighbours are merged, tokens kept)
PLOT_HEIGHT = 96  # px: room for the scale's three lines and the curve

Segment = tuple[float, float, float]  # (start ms, end ms, tokens/s)


def merge_steps(segments: Sequence[Segment], most: int = CURVE_STEPS) -> list[Segment]:
    """`segments` in at most `most` steps: neighbours merged in pairs, each merged step's rate the
    tokens of both over their time together (so the curve's area, the tokens written, is kept)."""
    steps = list(segments)
    while len(steps) > most:
        merged: list[Segment] = []
        for i in range(0, len(steps) - 1, 2):
            (s1, e1, r1), (s2, e2, r2) = steps[i], steps[i + 1]
            tokens = r1 * (e1 - s1) + r2 * (e2 - s2)
            merged.append((s1, e2, tokens / (e2 - s1) if e2 > s1 else r2))
        if len(steps) % 2:
            merged.append(steps[-1])
        steps = merged
    return steps


def curve_figure(segments: Sequence[Segment]) -> list[list[float]]:
    """The curve as an answer's figures keep it (JSON: lists of numbers, rounded)."""
    return [[round(s, 1), round(e, 1), round(r, 2)] for s, e, r in merge_steps(segments)]


def stored_curve(value: Any) -> list[Segment]:
    """A curve read back from an answer's figures; [] unless every step is three finite numbers, each
    starting where the last ended or later, with a rate of zero or more (imports come from anywhere)."""
    if not isinstance(value, list) or len(value) > CURVE_STEPS:
        return []
    steps: list[Segment] = []
    last_end = 0.0
    for step in value:
        if not (isinstance(step, list) and len(step) == 3
                and all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in step)):
            return []
        start, end, rate = (float(x) for x in step)
        if start < last_end or end <= start or rate < 0:
            return []
        steps.append((start, end, rate))
        last_end = end
    return steps


class RatePlot(QWidget):
    """Decode tokens/s over one answer, a step per metrics snapshot, with a time axis and a tok/s scale.

    The first token arrives at the TTFT, so even an answer with a single snapshot (a short one)
    draws a segment: its rate from the first token to the last.
    """

    MAX_POINTS = 240

    def __init__(self) -> None:
        super().__init__()
        # (start ms, end ms, tokens/s) of each interval between snapshots, in the request's time
        self.segments: list[Segment] = []
        self.average_only = False  # a stored answer without its curve: its average, drawn dashed
        self.setMinimumHeight(PLOT_HEIGHT)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._last: tuple[float, int] | None = None  # (time_ms, completion_tokens) of the last snapshot
        self._line = QColor(colours_for("light").highlight)

    @property
    def points(self) -> list[float]:
        """The rate of each interval, in order."""
        return [rate for _, _, rate in self.segments]

    def set_theme(self, effective: str) -> None:
        self._line = QColor(colours_for(effective).highlight)
        self.update()

    def reset(self) -> None:
        self.segments, self._last, self.average_only = [], None, False
        self.update()

    def curve(self) -> list[list[float]]:
        """This answer's curve, as its figures keep it."""
        return curve_figure(self.segments)

    def show_stored(self, figures_curve: Any, m: MetricsSnapshot) -> None:
        """A stored answer: its kept curve, or (none kept) its average from the first token to the last."""
        self.reset()
        steps = stored_curve(figures_curve)
        if steps:
            self.segments = steps
        else:
            self.add_snapshot(m)
            self.average_only = bool(self.segments)
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
        if not self.segments:  # no axes yet: the words across the whole plot, wrapped, never cut
            p.setPen(muted)
            p.drawText(QRectF(self.rect()).adjusted(SPACE.sm, 0, -SPACE.sm, 0),
                       int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), EMPTY_TEXT)
            return
        top_rate = _nice_ceiling(max(self.points, default=0.0) * 1.05)
        scale = f"{top_rate:,.0f}"
        left = fm.horizontalAdvance(max(scale, "tok/s", key=len)) + SPACE.sm
        top = fm.height() * 1.5 + SPACE.xs  # the unit's line, then half the top value's (centred on the top line)
        plot = QRectF(left, top, self.width() - left - SPACE.sm, self.height() - top - fm.height() - SPACE.sm)
        p.setPen(QPen(self.palette().mid().color(), 1))
        p.drawLine(plot.bottomLeft(), plot.bottomRight())
        p.drawLine(plot.bottomLeft(), plot.topLeft())
        p.setPen(muted)
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        p.drawText(QRectF(0, 0, left - SPACE.xs, fm.height()), right, "tok/s")  # the unit above the scale
        end_ms = self.segments[-1][1]
        span = max(end_ms, 1.0)
        for value, y in ((top_rate, plot.top()), (0.0, plot.bottom())):
            p.drawText(QRectF(0, y - fm.height() / 2, left - SPACE.xs, fm.height()), right, f"{value:,.0f}")
        below = plot.bottom() + SPACE.xxs
        p.drawText(QRectF(plot.left(), below, plot.width(), fm.height()), Qt.AlignmentFlag.AlignLeft, "0 s")
        p.drawText(QRectF(plot.left(), below, plot.width(), fm.height()), Qt.AlignmentFlag.AlignRight,
                   f"{end_ms / 1000:.1f} s")
        if self.average_only:  # under the dashed line (at the top), over the axis; cut with "…" if narrow
            room = plot.adjusted(SPACE.xs, 0, -SPACE.xs, -SPACE.xxs)
            words = fm.elidedText(AVERAGE_TEXT, Qt.TextElideMode.ElideRight, int(room.width()))
            p.drawText(room, int(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom), words)

        def at(t_ms: float, rate: float) -> QPointF:
            return QPointF(plot.left() + t_ms / span * plot.width(), plot.bottom() - rate / top_rate * plot.height())

        steps = QPolygonF()
        for start, end, rate in self.segments:
            steps.append(at(start, rate))
            steps.append(at(end, rate))
        pen = QPen(self._line, 2)
        if self.average_only:
            pen.setStyle(Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.drawPolyline(steps)


def _nice_ceiling(value: float) -> float:
    """The scale's top: 1, 2 or 5 times a power of ten, at or above `value`."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(float(m * power) for m in (1, 2, 5, 10) if m * power >= value)
