"""The Settings and Tools dialogs: section headings over their rows, the Tools list of servers and
tools, and every tree's branch arrows drawn with the line icons (Fusion draws its own)."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.icons import icon_file
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE


def _branch(state: str, image: str) -> str:
    """A tree's branch arrow for `state` (open or closed) from a line icon's file; Fusion's where the
    file could not be written."""
    return f"QTreeView::branch:has-children:{state} {{ image: url({image}); }}" if image else ""


def sheet(c: ThemeColours) -> str:
    """Rules for the dialogs' headings and lists, by their object names, and for every tree's branches."""
    closed, opened = icon_file("chevron-right", c.muted), icon_file("chevron-down", c.muted)
    return f"""
QLabel#heading, QLabel#model-scope {{ color: {c.muted}; font-size: {TYPE.small}px; font-weight: 600;
    padding-top: {SPACE.sm}px; }}
QLabel#setting-side-note {{ font-size: {TYPE.small}px; }}
QLabel#tools-intro, QLabel#tools-detail {{ color: {c.muted}; }}
QTreeWidget#tools-tree {{ background: {c.card}; border: 1px solid {c.border}; border-radius: {RADIUS.md}px;
    padding: {SPACE.xs}px; show-decoration-selected: 1; }}
QTreeWidget#tools-tree::item {{ padding: {SPACE.xs}px {SPACE.xxs}px; border-radius: 0; }}
QTreeWidget#tools-tree::item:hover:!selected, QTreeWidget#tools-tree::branch:hover:!selected {{
    background: {c.hover}; }}
QTreeWidget#tools-tree::item:selected, QTreeWidget#tools-tree::branch:selected {{ background: {c.highlight};
    color: {c.highlighted_text}; }}
QTreeView::branch {{ background: transparent; }}
{_branch('closed', closed)}
{_branch('open', opened)}"""
