"""The keyboard's place: a ring on whatever has the focus."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.styles.base import BUTTON_PAD_H, BUTTON_PAD_V
from prefill.ui.widgets.tokens import RADIUS, SPACE


def sheet(c: ThemeColours) -> str:
    """A 2 px ring in the focus colour on whatever has the keyboard.

    Fusion's own focus mark is a faint tint of the highlight, hard to find in the dark theme. The
    controls' backgrounds come from :mod:`base` (a style sheet that draws a widget's border draws its
    background too); the ring keeps each control's size: a push button's padding gives up the pixel its
    border gains, a tool button's border is 2 px already (transparent until it has the keyboard).
    """
    ring = f"border: 2px solid {c.focus}; border-radius: {RADIUS.sm}px;"
    return f"""
QPushButton:focus {{ {ring} padding: {BUTTON_PAD_V - 1}px {BUTTON_PAD_H - 1}px; }}
QToolButton:focus {{ {ring} }}
QLineEdit:focus, QPlainTextEdit:focus, QTextEdit:focus, QAbstractItemView:focus {{ {ring} background: {c.base}; }}
QAbstractScrollArea:focus {{ {ring} }}
QComboBox:focus {{ {ring} }}
QCheckBox:focus, QRadioButton:focus {{ {ring} }}
QAbstractSpinBox:focus, QSlider:focus {{ {ring} }}
QLineEdit:focus, QComboBox:focus {{ padding: {SPACE.xs - 1}px {SPACE.sm - 1}px; }}
QPlainTextEdit:focus, QTextEdit:focus {{ padding: {SPACE.xs - 1}px; }}
QAbstractSpinBox QLineEdit:focus, QComboBox QLineEdit:focus {{ border: none; padding: 0; background: transparent; }}
QComboBox QAbstractItemView:focus {{ border: 1px solid {c.border}; }}
"""
