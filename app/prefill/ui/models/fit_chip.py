"""A fit verdict as a chip: its few words on a soft fill of the verdict's colour (the theme's roles).

One verdict name per `Fit` ("good", "partial", "cpu", "no", and "unknown"), used by the cards' painter
(`list_cards.py`), the file rows' badge (`fit_badge.py`, styled by the name in `styles/models.py`) and
the model finder, so a verdict has one colour everywhere. The colours are read from the palette at
paint time, so a theme switch repaints them without rebuilding anything.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QGuiApplication, QPainter, QPalette

from prefill.engine.llama.memory_fit import Fit, FitEstimate
from prefill.ui.widgets.colours import ThemeColours, colours_for
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE

VERDICTS: dict[Fit, str] = {Fit.FULL_GPU: "good", Fit.PARTIAL: "partial", Fit.CPU_ONLY: "cpu", Fit.WONT_FIT: "no"}
UNKNOWN = "unknown"
CHIP_WORDS = {"good": "Fits the GPU", "partial": "Partly on the GPU", "cpu": "Runs on the CPU", "no": "Too big",
              UNKNOWN: "Fit unknown"}


def verdict_of(e: FitEstimate | Fit | None) -> str:
    """The verdict's name ("unknown" for no estimate)."""
    if e is None:
        return UNKNOWN
    return VERDICTS[e.fit if isinstance(e, FitEstimate) else e]


def theme_colours() -> ThemeColours:
    """The colours of the theme in use, told by the application palette's window colour."""
    window = QGuiApplication.palette().color(QPalette.ColorRole.Window)
    return colours_for("dark" if window.lightness() < 128 else "light")


def chip_colours(c: ThemeColours, verdict: str) -> tuple[str, str]:
    """(words, fill) of a verdict's chip."""
    if verdict == UNKNOWN:
        return c.muted, c.alternate_base
    return getattr(c, f"fit_{verdict}"), getattr(c, f"fit_{verdict}_bg")


def chip_font(base: QFont) -> QFont:
    f = QFont(base)
    f.setPixelSize(TYPE.caption)
    f.setWeight(QFont.Weight.DemiBold)
    return f


def chip_size(font: QFont, words: str) -> tuple[int, int]:
    m = QFontMetrics(font)
    return m.horizontalAdvance(words) + 2 * SPACE.sm, m.height() + SPACE.xs


def paint_chip(painter: QPainter, right: int, top: int, words: str, verdict: str, font: QFont,
               c: ThemeColours) -> QRect:
    """Draw the chip with its right edge at `right`; returns where it went."""
    w, h = chip_size(font, words)
    rect = QRect(right - w, top, w, h)
    fg, bg = chip_colours(c, verdict)
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(bg))
    painter.drawRoundedRect(QRectF(rect), min(RADIUS.pill, h / 2), min(RADIUS.pill, h / 2))
    painter.setPen(QColor(fg))
    painter.setFont(font)
    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, words)
    painter.restore()
    return rect
