"""The window's notices: the banners at the top of the page and the toast near its bottom."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def sheet(c: ThemeColours) -> str:
    """Banners as cards with an accent on the left (amber: to read or do; red: a lasting problem), and
    the toast as a dark pill (light in the dark theme), the transcript's Undo offer too."""
    return f"""
QFrame#notice-banner, QFrame#problem-banner {{ background: {c.card}; border: 1px solid {c.border};
    border-left: 4px solid {c.kv_amber}; border-radius: {RADIUS.md}px; }}
QFrame#problem-banner {{ border-left-color: {c.kv_red}; }}
QFrame#notice-banner QLabel, QFrame#problem-banner QLabel {{ background: transparent; border: none;
    font-size: {TYPE.small}px; }}
QFrame#toast, QFrame#undo-toast {{ background: {c.toast}; border: none; border-radius: {RADIUS.lg}px; }}
QFrame#undo-toast QLabel {{ color: {c.toast_text}; background: transparent; font-size: {TYPE.small}px; }}
QFrame#undo-toast QPushButton#undo-button {{ color: {c.toast_text}; background: transparent; font-weight: 600;
    font-size: {TYPE.small}px; border: 1px solid {c.toast_text}; border-radius: {RADIUS.sm}px;
    padding: {SPACE.xxs}px {SPACE.sm}px; }}
QFrame#undo-toast QPushButton#undo-button:focus {{ border: 2px solid {c.focus}; }}
QFrame#toast QLabel {{ color: {c.toast_text}; background: transparent; font-size: {TYPE.small}px;
    padding: {SPACE.xxs}px 0; }}"""
