"""The window's frame and its doors: the tool bar, the sheets, the welcome, Settings and the shortcuts sheet."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def sheet(c: ThemeColours) -> str:
    """Rules for the widgets of the window's frame, dialogs and sheets, by their object names."""
    return f"""
QToolBar#main-toolbar {{ background: {c.window}; border: none; border-bottom: 1px solid {c.border};
    padding: {SPACE.xs}px {SPACE.sm}px; spacing: {SPACE.xxs}px; }}
QToolBar#main-toolbar::separator {{ background: {c.border}; width: 1px; margin: {SPACE.xs}px {SPACE.xs}px; }}
QToolBar#main-toolbar QToolButton, QToolBar#main-toolbar QLabel, QToolBar#main-toolbar QComboBox,
QToolBar#main-toolbar QSpinBox {{ font-size: {TYPE.small}px; }}
QToolBar#main-toolbar QComboBox, QToolBar#main-toolbar QSpinBox {{ padding: {SPACE.xxs + 1}px {SPACE.sm}px; }}
QToolBar#main-toolbar QComboBox:focus {{ padding: {SPACE.xxs}px {SPACE.sm - 1}px; }}
QToolButton#export-import::menu-indicator, QToolButton#chat-tools::menu-indicator {{ image: none; width: 0; }}
QLabel#load-state {{ color: {c.muted}; padding: 0 {SPACE.xs}px; }}
QLabel#sheet-title {{ font-size: {TYPE.title}px; font-weight: 600; }}
QLabel#sheet-hint, QLabel#sheet-keys {{ color: {c.muted}; }}
QLabel#sheet-keys {{ font-size: {TYPE.small}px; }}
QLabel#heading {{ font-weight: 600; }}
QLabel#setting-fault, QLabel#settings-problem, QLabel#server-problem, QLabel#tools-error,
QLabel#paste-problem {{ color: {c.danger}; }}
QLabel#welcome-title {{ font-size: {TYPE.headline}px; font-weight: 600; }}
QLabel#welcome-text, QLabel#welcome-more {{ color: {c.muted}; }}
QLabel#shortcuts-heading {{ color: {c.muted}; font-size: {TYPE.small}px; font-weight: 600;
    padding-top: {SPACE.md}px; }}
QLabel#keycap {{ background: {c.card}; border: 1px solid {c.border}; border-bottom-width: 2px;
    border-radius: {RADIUS.sm}px; padding: {SPACE.xxs}px {SPACE.sm}px; font-size: {TYPE.small}px; }}
QScrollArea#shortcuts-list, QWidget#shortcuts-rows {{ background: {c.window}; border: none; }}"""
