"""The sidebar: its headline, its cards of figures and the Details switch."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def sheet(c: ThemeColours) -> str:
    """Rules for the sidebar's headline, cards, labels and notes."""
    cards = "QFrame#sidebar-headline, QFrame#sidebar-card, QFrame#documents-box, QFrame#speculation-box"
    return f"""
QWidget#sidebar-content {{ background: transparent; }}
{cards} {{ background: {c.card}; border: 1px solid {c.border}; border-radius: {RADIUS.md}px; }}
#sidebar-content QLabel {{ font-size: {TYPE.small}px; background: transparent; border: none; }}
#sidebar-content QLabel#sidebar-card-title {{ font-size: {TYPE.caption}px; font-weight: 600; color: {c.muted}; }}
#sidebar-content QLabel#figure-label {{ color: {c.muted}; }}
#sidebar-content QLabel#headline-value {{ font-size: {TYPE.headline}px; font-weight: 600; color: {c.text}; }}
#sidebar-content QLabel#headline-caption {{ font-size: {TYPE.caption}px; color: {c.muted}; }}
#sidebar-content QLabel#headline-state, #sidebar-content QLabel#cache-note,
#sidebar-content QLabel#documents-note {{ color: {c.muted}; }}
#sidebar-content QLabel#backend-warning {{ color: {c.kv_amber}; font-weight: 600; }}
QToolButton#sidebar-disclosure {{ font-size: {TYPE.small}px; color: {c.muted}; border: none;
    padding: {SPACE.xxs}px {SPACE.xs}px; }}
QToolButton#sidebar-disclosure:hover {{ color: {c.text}; }}"""
