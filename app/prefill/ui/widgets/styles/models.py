"""The Models page and the model finder: the section switch, the status line, the file rows (a list with
caption headings, no frame or grid) and their fit chips, the model card and its code's Copy, the download
rows."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE

_VERDICTS = ("good", "partial", "cpu", "no")


def sheet(c: ThemeColours) -> str:
    """Rules for the widgets the models room names."""
    chips = "\n".join(
        f'QLabel#fit-badge[verdict="{v}"] {{ color: {getattr(c, f"fit_{v}")}; '
        f'background: {getattr(c, f"fit_{v}_bg")}; }}' for v in _VERDICTS)
    return f"""
QLabel#fit-badge {{ border-radius: {RADIUS.sm + 3}px; padding: {SPACE.xxs}px {SPACE.sm}px;
    font-size: {TYPE.caption}px; font-weight: 600; }}
QLabel#fit-badge[verdict="unknown"] {{ color: {c.muted}; background: {c.alternate_base}; }}
QLabel#fit-badge[verdict=""] {{ color: {c.muted}; font-style: italic; }}
{chips}
QLabel#fit-figures, QLabel#models-message, QLabel#section-note, QLabel#download-status,
QLabel#repo-facts, QLabel#finder-hint {{ color: {c.muted}; font-size: {TYPE.small}px; }}
QLabel#repo-title {{ font-size: {TYPE.title}px; font-weight: 600; }}
QPushButton#models-section {{ border: 1px solid {c.border}; border-radius: {RADIUS.sm}px; background: {c.base};
    padding: {SPACE.xs}px {SPACE.md}px; }}
QPushButton#models-section:checked {{ background: {c.highlight}; color: {c.highlighted_text};
    border-color: {c.highlight}; }}
QListView#search-results, QListView#library, QListView#finder-list, QListView#abandoned-downloads,
QScrollArea#download-queue {{ background: transparent; border: none; }}
QFrame#download-row {{ background: {c.card}; border: 1px solid {c.border}; border-radius: {RADIUS.md}px; }}
QLabel#download-name {{ font-weight: 600; }}
QProgressBar#download-bar {{ background: {c.kv_track}; border: none; border-radius: {SPACE.xs // 2 + 1}px;
    max-height: {SPACE.xs + 2}px; min-height: {SPACE.xs + 2}px; }}
QProgressBar#download-bar::chunk {{ background: {c.highlight}; border-radius: {SPACE.xs // 2 + 1}px; }}
QTreeWidget#repo-files {{ background: transparent; border: 2px solid transparent; border-radius: {RADIUS.sm}px; }}
QTreeWidget#repo-files::item {{ border: none; }}
QTreeWidget#repo-files::item:hover {{ background: {c.hover}; }}
QTreeWidget#repo-files::item:selected, QTreeWidget#repo-files::branch:selected {{ background: {c.user_bubble};
    color: {c.text}; }}
QTreeWidget#repo-files::branch {{ background: transparent; image: none; border-image: none; }}
QTreeWidget#repo-files QHeaderView::section {{ background: transparent; color: {c.muted}; border: none;
    border-bottom: 1px solid {c.border}; padding: {SPACE.xs}px {SPACE.xs}px; font-size: {TYPE.caption}px;
    font-weight: 600; }}
QTextBrowser#model-card {{ border: 2px solid transparent; border-top: 1px solid {c.border}; border-radius: 0;
    padding-top: {SPACE.xs}px; }}
QTreeWidget#repo-files:focus, QTextBrowser#model-card:focus {{ border: 2px solid {c.focus};
    border-radius: {RADIUS.sm}px; }}
QToolButton#card-code-copy {{ font-size: {TYPE.caption}px; color: {c.muted}; }}
QDialog#model-finder {{ background: {c.window}; border: 1px solid {c.border}; border-radius: {RADIUS.lg}px; }}
QLineEdit#finder-query {{ font-size: {TYPE.title}px; padding: {SPACE.sm}px {SPACE.md}px;
    border: 1px solid {c.border}; border-radius: {RADIUS.md}px; background: {c.base}; }}"""
