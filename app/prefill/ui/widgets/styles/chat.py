"""The chat: a question's soft bubble, an answer as plain text, quiet notes, code blocks, the actions."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def sheet(c: ThemeColours) -> str:
    """Rules for the transcript's messages (``ui/chat/transcript``), by the object names set there.

    No message has a hard border: a question's bubble is a soft fill, an answer stands on the page
    itself, a note is muted words beside a thin rule, a summary a dashed outline.
    """
    caption = f"color: {c.muted}; font-size: {TYPE.caption}px;"
    return f"""
QFrame#message-user, QFrame#message-assistant, QFrame#message-tool {{ background: transparent; border: none; }}
QFrame#message-bubble {{ background: {c.user_bubble}; border: none; border-radius: {RADIUS.lg}px; }}
QFrame#message-content {{ background: transparent; border: none; }}
QFrame#message-notice {{ background: transparent; border: none; border-left: 2px solid {c.border}; }}
QFrame#message-summary {{ background: transparent; border: 1px dashed {c.border};
    border-radius: {RADIUS.md}px; }}
QFrame#message-user QTextBrowser, QFrame#message-assistant QTextBrowser,
QFrame#message-notice QTextBrowser {{ background: transparent; border: none; font-size: {TYPE.body}px; }}
QFrame#message-notice QTextBrowser {{ color: {c.muted}; font-size: {TYPE.small}px; }}
QFrame QTextBrowser#code-block {{ background: {c.code_block}; border: none; border-radius: {RADIUS.md}px;
    font-size: {TYPE.code}px; }}
QLabel#code-language {{ {caption} }}
QToolButton#code-copy {{ {caption} background: transparent; border: 2px solid transparent;
    border-radius: {RADIUS.sm}px; padding: {SPACE.xxs}px {SPACE.xs}px; }}
QToolButton#code-copy:hover {{ background: {c.button}; }}
QToolButton#code-copy:focus {{ border: 2px solid {c.focus}; padding: {SPACE.xxs}px {SPACE.xs}px; }}
QLabel#message-title, QLabel#message-figures, QLabel#message-version, QLabel#message-sources-title,
QLabel#passage-note {{ {caption} }}
QToolButton[chatAction="true"] {{ background: transparent; border: 2px solid transparent;
    border-radius: {RADIUS.sm}px; padding: {SPACE.xxs}px; }}
QToolButton[chatAction="true"]:hover {{ background: {c.button}; }}
QToolButton[chatAction="true"]:focus {{ border: 2px solid {c.focus}; background: {c.alternate_base};
    padding: {SPACE.xxs}px; }}
QToolButton#message-retry {{ font-size: {TYPE.small}px; padding: {SPACE.xxs}px {SPACE.xs}px; }}
QToolButton#summary-toggle {{ background: transparent; border: 2px solid transparent; border-radius: {RADIUS.sm}px;
    padding: {SPACE.xxs}px {SPACE.xs}px; }}
QToolButton#summary-toggle:hover {{ background: {c.button}; }}
QToolButton#summary-toggle:focus {{ border: 2px solid {c.focus}; }}
QLabel#summary-note {{ color: {c.muted}; font-size: {TYPE.small}px; }}"""
