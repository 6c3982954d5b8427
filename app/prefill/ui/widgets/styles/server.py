"""The Server panel and the docks' title bars: the panel's cards of figures, its list of slots, and a
dock's title with its line-icon buttons."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def sheet(c: ThemeColours) -> str:
    """Rules for the dock title bar and the Server panel's widgets, by their object names."""
    clear = ("QScrollArea#server-slots, QWidget#server-slots-inside, QScrollArea#server-figures-scroll, "
             "QWidget#server-figures")
    return f"""
QWidget#dock-title {{ background: {c.window}; border-top: 1px solid {c.border}; }}
QLabel#dock-title-text {{ font-size: {TYPE.small}px; font-weight: 600; color: {c.text}; }}
QWidget#dock-title QToolButton {{ padding: {SPACE.xxs}px; }}
{clear} {{ background: transparent; border: none; }}
QLabel#server-address {{ font-size: {TYPE.small}px; }}
QLabel#server-box-label {{ color: {c.muted}; font-size: {TYPE.small}px; }}
QFrame#server-card, QFrame#server-slot {{ background: {c.card}; border: 1px solid {c.border}; }}
QFrame#server-card {{ border-radius: {RADIUS.md}px; }}
QFrame#server-slot {{ border-radius: {RADIUS.sm}px; }}
QFrame#server-card QLabel, QFrame#server-slot QLabel {{ background: transparent; border: none;
    font-size: {TYPE.small}px; }}
QLabel#server-card-title {{ font-size: {TYPE.caption}px; font-weight: 600; color: {c.muted}; }}
QLabel#server-figure-label, QLabel#slot-number, QLabel#slot-figures {{ color: {c.muted}; }}
QLabel#slot-state {{ color: {c.muted}; font-weight: 600; }}
QLabel#slot-state[busy="true"] {{ color: {c.highlight}; }}
QLabel#slot-heading {{ color: {c.muted}; font-size: {TYPE.caption}px; font-weight: 600;
    padding-top: {SPACE.xs}px; }}
QLabel#slots-empty {{ color: {c.muted}; font-size: {TYPE.small}px; }}"""
