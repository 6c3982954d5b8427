"""The fit estimate as a coloured badge with its figures beside it, all in view.

The verdict reads as words on a chip of its colour (green: on the GPU, blue: partly, amber: CPU
only, red: too big; the theme's `fit_*` roles, set by `styles/models.py` from the badge's `verdict`
property), and the figures the verdict rests on follow it in plain text, so nothing a person needs
is hidden in a tooltip (the tooltip keeps the full breakdown). In a narrow cell (900×600, Serve open)
the figures give way, never the chip: first to their short forms ("needs 0.0 / 22.4 GiB", then
"0.0 / 22.4 GiB"), then cut with "…"; their tooltip has them whole.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QWidget

from prefill.engine.llama.memory_fit import Fit, FitEstimate, fit_breakdown
from prefill.ui.models.fit_chip import UNKNOWN, VERDICTS
from prefill.ui.widgets.elided_label import ElidedLabel
from prefill.ui.widgets.plain_text import tooltip
from prefill.ui.widgets.tokens import SPACE

_GIB = 1 << 30


def badge_words(e: FitEstimate) -> str:
    """The verdict in a few words."""
    if e.fit == Fit.FULL_GPU:
        return "Fits on the GPU"
    if e.fit == Fit.PARTIAL:
        return f"Partly on the GPU ({e.gpu_layers} of {e.n_layer} layers)"
    if e.fit == Fit.CPU_ONLY:
        return "Runs on the CPU"
    return "Too big for this machine"


def fit_figures(e: FitEstimate, compact: bool = False) -> str:
    """What the verdict rests on: the memory needed against what is free where it runs, at which
    context (compact: the two figures only, needed / free); the parts are in the tooltip (`fit_breakdown`)."""
    on_gpu = e.fit in (Fit.FULL_GPU, Fit.PARTIAL)
    need = e.vram_needed if on_gpu else e.total
    free = f"{e.vram_free / _GIB:.1f} GiB free GPU memory" if on_gpu else f"{e.ram_available / _GIB:.1f} GiB free RAM"
    if compact:
        return f"{need / _GIB:.1f} / {(e.vram_free if on_gpu else e.ram_available) / _GIB:.1f} GiB"
    text = f"needs {need / _GIB:.2f} of {free}, at {e.n_ctx:,} tokens"
    if e.projector:
        text += f", with its image projector and an image of {e.image_tokens} tokens"
    return text


class FitBadge(QWidget):
    """A badge and its figures; `set_estimate` or `set_unknown` fills it (plain text only)."""

    def __init__(self, text: str = "estimating…", compact: bool = False, parent: QWidget | None = None):
        super().__init__(parent)
        self.compact = compact
        self.badge = QLabel()
        self.badge.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)  # the words never cut
        self.badge.setObjectName("fit-badge")
        self.badge.setTextFormat(Qt.TextFormat.PlainText)
        self.figures = ElidedLabel()  # in a narrow cell the figures give way, never the badge
        self.figures.setObjectName("fit-figures")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(SPACE.xxs, SPACE.xxs // 2, SPACE.xxs, SPACE.xxs // 2)
        layout.setSpacing(SPACE.sm)
        layout.addWidget(self.badge)
        layout.addWidget(self.figures, 1)
        self._paint(text, "", "")

    def set_estimate(self, e: FitEstimate) -> None:
        breakdown = fit_breakdown(e)
        compact = fit_figures(e, compact=True)
        shorter = (compact,) if self.compact else (f"needs {compact}", compact)
        self._paint(badge_words(e), fit_figures(e, self.compact), VERDICTS[e.fit], shorter, breakdown)
        self.setToolTip(tooltip(breakdown))

    def set_unknown(self, why: str) -> None:
        self._paint("Fit unknown", why, UNKNOWN)

    def text(self) -> str:
        """What it says, badge then figures (what a test or a screen reader reads)."""
        return f"{self.badge.text()}: {self.figures.text()}" if self.figures.text() else self.badge.text()

    def verdict(self) -> str:
        """The verdict's name ("good", "partial", "cpu", "no", "unknown"; "" while estimating)."""
        return self._verdict

    def _paint(self, words: str, figures: str, verdict: str, shorter: tuple[str, ...] = (),
               hover: str = "") -> None:
        self._verdict = verdict
        self.badge.setText(words)
        self.figures.set_text(figures, *shorter, hover=hover)
        self.figures.setVisible(bool(figures))
        self.badge.setProperty("verdict", verdict)  # the style sheet colours the chip by it
        self.badge.style().unpolish(self.badge)
        self.badge.style().polish(self.badge)
        self.setAccessibleName(self.text())
