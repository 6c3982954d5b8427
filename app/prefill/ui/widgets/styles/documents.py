"""The documents room: the collections dialog (cards, the chosen one's files, the empty state) and the
indexing panel over the message box (its bar in the state's colour, its file rows, its problems)."""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE

BAR = SPACE.xs + 2  # the indexing bar's height: thin, as a download's


def sheet(c: ThemeColours) -> str:
    """Rules for the widgets the documents room names."""
    return f"""
QLabel#collections-title {{ font-size: {TYPE.headline}px; font-weight: 600; }}
QLabel#collections-empty-title {{ font-size: {TYPE.title}px; font-weight: 600; }}
QLabel#collections-empty-hint {{ color: {c.muted}; }}
QListWidget#collections-list {{ background: transparent; border: none; }}
QListWidget#collections-list::item, QListWidget#collections-list::item:hover,
QListWidget#collections-list::item:selected {{ background: transparent; padding: 0; }}
QFrame#collection-card {{ background: {c.card}; border: 1px solid {c.border}; border-radius: {RADIUS.md}px; }}
QFrame#collection-card:hover {{ background: {c.alternate_base}; }}
QFrame#collection-card[chosen="true"] {{ background: {c.user_bubble}; border-color: {c.highlight}; }}
QFrame#collection-card QLabel {{ background: transparent; }}
QLabel#collection-card-name {{ font-weight: 600; }}
QLabel#collection-card-facts, QLabel#collection-card-line {{ color: {c.muted}; font-size: {TYPE.small}px; }}
QToolButton#collection-action {{ padding: {SPACE.xxs}px; }}
QFrame#collection-detail {{ background: {c.card}; border: 1px solid {c.border}; border-radius: {RADIUS.lg}px; }}
QFrame#collection-detail QLabel {{ background: transparent; }}
QLabel#collection-name {{ font-size: {TYPE.title}px; font-weight: 600; }}
QLabel#collection-size, QLabel#collection-model, QLabel#collection-watched {{ color: {c.muted};
    font-size: {TYPE.small}px; }}
QLabel#collection-files-caption {{ color: {c.muted}; font-size: {TYPE.caption}px; font-weight: 600; }}
QListWidget#collection-files {{ background: transparent; border: none; border-top: 1px solid {c.border};
    border-radius: 0; }}
QFrame#index-panel {{ background: {c.card}; border: 1px solid {c.border}; border-radius: {RADIUS.md}px; }}
QFrame#index-panel QLabel, QWidget#index-files, QWidget#index-file {{ background: transparent; }}
QLabel#index-line {{ font-size: {TYPE.small}px; }}
QLabel#index-file-name {{ font-size: {TYPE.small}px; }}
QLabel#index-file-state {{ color: {c.muted}; font-size: {TYPE.small}px; }}
QLabel#index-problem {{ font-size: {TYPE.small}px; }}
QScrollArea#index-problems, QWidget#index-problems-body {{ background: transparent; border: none; }}
QToolButton#index-stop {{ font-size: {TYPE.small}px; }}
QProgressBar#index-bar {{ background: {c.kv_track}; border: none; border-radius: {BAR // 2}px;
    max-height: {BAR}px; min-height: {BAR}px; }}
QProgressBar#index-bar::chunk {{ background: {c.highlight}; border-radius: {BAR // 2}px; }}
QProgressBar#index-bar[state="done"]::chunk {{ background: {c.kv_green}; }}
QProgressBar#index-bar[state="stopped"]::chunk {{ background: {c.kv_amber}; }}"""
