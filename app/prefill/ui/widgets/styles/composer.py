"""The composer: its card, the field and the buttons inside it, the documents' chips and the context meter."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def sheet(c: ThemeColours) -> str:
    """Rules for the composer's widgets, by their object names (ui/chat/composer/).

    The card's border takes the focus colour while the field has the keyboard (the field draws no
    ring of its own inside it); its buttons keep the focus ring, which these rules must set again,
    since a rule naming a button by its name outweighs focus.py's.
    """
    ring = f"border: 2px solid {c.focus};"
    icon_button = "QToolButton#attach-button, QToolButton#documents-button"
    return f"""
QFrame#composer-card {{ background: {c.base}; border: 1px solid {c.border}; border-radius: {RADIUS.lg}px; }}
QFrame#composer-card[focused="true"] {{ border: 1px solid {c.focus}; }}
QPlainTextEdit#message-input, QPlainTextEdit#message-input:focus {{ background: transparent; border: none;
    font-size: {TYPE.body}px; color: {c.text}; }}
{icon_button} {{ background: transparent; border: 2px solid transparent; border-radius: {RADIUS.sm}px;
    padding: {SPACE.xs}px; }}
QToolButton#attach-button:hover, QToolButton#documents-button:hover {{ background: {c.button}; }}
QToolButton#attach-button:focus, QToolButton#documents-button:focus {{ {ring} }}
QToolButton#documents-button::menu-indicator {{ image: none; width: 0; }}
QToolButton#send-button {{ background: {c.composer_send}; border: 2px solid transparent;
    border-radius: {RADIUS.md}px; padding: {SPACE.xs}px; }}
QToolButton#send-button:hover {{ border: 2px solid {c.border}; }}
QToolButton#send-button:focus {{ {ring} }}
QToolButton#send-button:disabled {{ background: {c.button}; }}
QFrame#document-chip {{ background: {c.alternate_base}; border: 1px solid {c.border};
    border-radius: {RADIUS.md}px; }}
QToolButton#document-chip-mark, QToolButton#document-remove {{ background: transparent; border: none;
    padding: 0; }}
QToolButton#document-remove:hover {{ background: {c.button}; border-radius: {RADIUS.sm}px; }}
QToolButton#document-remove:focus {{ {ring} border-radius: {RADIUS.sm}px; }}
QLabel#document-chip-name {{ font-size: {TYPE.small}px; }}
QLabel#context-meter-words {{ color: {c.muted}; font-size: {TYPE.caption}px; }}
QLabel#context-meter-words[level="near"], QLabel#context-meter-words[level="over"] {{ color: {c.text}; }}
QLabel#context-meter-words[level="over"] {{ font-weight: 600; }}
QFrame#context-meter-bar, QFrame#meter-free {{ background: {c.kv_track}; border: none; }}
QFrame#meter-system {{ background: {c.meter_system}; border: none; }}
QFrame#meter-tools {{ background: {c.meter_tools}; border: none; }}
QFrame#meter-documents {{ background: {c.meter_documents}; border: none; }}
QFrame#meter-conversation {{ background: {c.meter_conversation}; border: none; }}
QFrame#meter-reserve {{ background: {c.border}; border: none; }}
QFrame#meter-reserve[over="true"] {{ background: {c.kv_red}; }}"""
