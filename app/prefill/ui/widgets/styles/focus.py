"""The keyboard's place: a ring on whatever has the focus."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS


def sheet(c: ThemeColours) -> str:
    """A 2 px ring in the focus colour on whatever has the keyboard.

    Fusion's own focus mark is a faint tint of the highlight, hard to find in the dark theme.
    Each rule sets the background as well as the border: a style sheet that draws a widget's
    border draws its background too, and would leave it blank otherwise.
    """
    ring = f"border: 2px solid {c.focus}; border-radius: {RADIUS.sm - 2}px;"
    return f"""
QPushButton:focus {{ {ring} background: {c.button}; padding: 3px 10px; }}
QToolButton:focus {{ {ring} background: {c.alternate_base}; padding: 1px 3px; }}
QLineEdit:focus, QPlainTextEdit:focus, QTextEdit:focus, QAbstractItemView:focus {{ {ring} background: {c.base}; }}
QAbstractScrollArea:focus {{ {ring} }}
QComboBox:focus {{ {ring} background: {c.button}; padding: 0 2px; }}
QCheckBox:focus, QRadioButton:focus {{ {ring} }}
QSpinBox:focus, QDoubleSpinBox:focus, QSlider:focus {{ {ring} }}
"""
