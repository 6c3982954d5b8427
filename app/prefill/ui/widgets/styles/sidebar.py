"""The sidebar: its headline, its cards of figures and the Details switch (and the group boxes'
cards, which dialogs share)."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def sheet(c: ThemeColours) -> str:
    """Rules for the group boxes, the sidebar's headline, cards, labels and notes."""
    cards = "QFrame#sidebar-headline, QFrame#sidebar-card, QFrame#documents-box, QFrame#speculation-box"
    return f"""
QGroupBox {{ background: {c.card}; border: 1px solid {c.border}; border-radius: {RADIUS.sm + 2}px;
    margin-top: 14px; padding: 8px 6px 6px 6px; }}
QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px;
    color: {c.muted}; font-weight: 600; }}
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
