"""The chat: messages, their titles and figures."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS


def sheet(c: ThemeColours) -> str:
    """Rules for the transcript's messages."""
    return f"""
QFrame#message-user {{ background: {c.user_bubble}; border: 1px solid {c.border};
    border-radius: {RADIUS.md}px; }}
QFrame#message-assistant {{ background: {c.assistant_bubble}; border: 1px solid {c.border};
    border-radius: {RADIUS.md}px; }}
QFrame#message-notice, QFrame#message-summary {{ background: transparent; border: 1px dashed {c.border};
    border-radius: {RADIUS.md}px; }}
QFrame#message-user QTextBrowser, QFrame#message-assistant QTextBrowser,
QFrame#message-notice QTextBrowser {{ background: transparent; border: none; }}
QLabel#message-title {{ font-weight: 600; }}
QLabel#message-figures, QLabel#message-sources-title, QLabel#passage-note {{ color: {c.muted}; }}"""
