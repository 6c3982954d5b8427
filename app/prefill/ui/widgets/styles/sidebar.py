"""The sidebar's cards."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS


def sheet(c: ThemeColours) -> str:
    """Rules for the sidebar's group boxes."""
    return f"""
QGroupBox {{ background: {c.card}; border: 1px solid {c.border}; border-radius: {RADIUS.sm + 2}px;
    margin-top: 14px; padding: 8px 6px 6px 6px; }}
QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px;
    color: {c.muted}; font-weight: 600; }}"""
