"""The window's notices: the banners at the top of the page and the toast near its bottom."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def sheet(c: ThemeColours) -> str:
    """Banners as cards with an accent on the left (amber: to read or do; red: a lasting problem), and
    the toast as a dark pill (light in the dark theme)."""
    return f"""
QFrame#notice-banner, QFrame#problem-banner {{ background: {c.card}; border: 1px solid {c.border};
    border-left: 4px solid {c.kv_amber}; border-radius: {RADIUS.md}px; }}
QFrame#problem-banner {{ border-left-color: {c.kv_red}; }}
QFrame#notice-banner QLabel, QFrame#problem-banner QLabel {{ background: transparent; border: none;
    font-size: {TYPE.small}px; }}
QFrame#toast {{ background: {c.toast}; border-radius: {RADIUS.lg}px; }}
QFrame#toast QLabel {{ color: {c.toast_text}; background: transparent; font-size: {TYPE.small}px;
    padding: {SPACE.xxs}px 0; }}"""
