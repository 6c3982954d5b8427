"""Every control's look, app-wide: buttons, inputs, combos, tabs, lists and tables, scroll bars, menus
and tooltips, from the tokens and the colour roles.

Rules here name widget classes only, so a room's own rule (by object name) wins over them. This piece
comes first in the sheet; :mod:`focus` comes after it and only changes the border of what has the
keyboard, keeping each control's size (a push button's 1 px border becomes 2 px, its padding 1 px less).
"""

from __future__ import annotations

from prefill.ui.widgets.colours import ThemeColours
from prefill.ui.widgets.icons import icon_file
from prefill.ui.widgets.tokens import ICON, RADIUS, SPACE

# A push button's padding: the focus ring takes 1 px of it (focus.py), so the button keeps its size.
BUTTON_PAD_V, BUTTON_PAD_H = SPACE.xs + 1, SPACE.md
# A tool button's border is 2 px and transparent: the focus ring only colours it.
TOOL_PAD_V, TOOL_PAD_H = SPACE.xxs + 1, SPACE.xs


def _icon_rule(selector: str, image: str, size: str) -> str:
    """A sub-control (an arrow, a check box's tick) drawn from a line icon's file; none (Fusion's own)
    where the file could not be written."""
    return f"{selector} {{ image: url({image}); {size} }}" if image else ""


def sheet(c: ThemeColours) -> str:
    """Rules for the standard controls, in both themes."""
    up, down = icon_file("chevron-up", c.muted), icon_file("chevron-down", c.muted)
    up_off, down_off = icon_file("chevron-up", c.border), icon_file("chevron-down", c.border)  # at a limit
    arrow = f"width: {ICON.inline - SPACE.xs}px; height: {ICON.inline - SPACE.xs}px;"
    tick = icon_file("check", c.highlighted_text)  # a ticked box: the line icon's check on the accent
    boxes = "QCheckBox::indicator, QAbstractItemView::indicator"
    ticked = "QCheckBox::indicator:checked, QAbstractItemView::indicator:checked"
    return f"""
QPushButton {{ background: {c.button}; color: {c.text}; border: 1px solid {c.border};
    border-radius: {RADIUS.sm}px; padding: {BUTTON_PAD_V}px {BUTTON_PAD_H}px; }}
QPushButton:hover {{ background: {c.hover}; }}
QPushButton:pressed, QPushButton:checked {{ background: {c.border}; }}
QPushButton:disabled {{ color: {c.muted}; background: {c.window}; }}
QPushButton[primary="true"] {{ background: {c.highlight}; color: {c.highlighted_text}; border-color: {c.highlight}; }}
QPushButton[primary="true"]:disabled {{ background: {c.button}; color: {c.muted}; border-color: {c.border}; }}
QDialogButtonBox {{ dialogbuttonbox-buttons-have-icons: 0; }}
QDialogButtonBox QPushButton {{ min-width: {SPACE.xxl * 2}px; }}
QToolButton {{ background: transparent; color: {c.text}; border: 2px solid transparent;
    border-radius: {RADIUS.sm}px; padding: {TOOL_PAD_V}px {TOOL_PAD_H}px; }}
QToolButton:hover {{ background: {c.hover}; }}
QToolButton:pressed {{ background: {c.border}; }}
QToolButton:checked {{ background: {c.button}; }}
QToolButton:disabled {{ color: {c.muted}; }}
QLineEdit, QPlainTextEdit, QTextEdit, QAbstractSpinBox, QComboBox {{ background: {c.base}; color: {c.text};
    border: 1px solid {c.border}; border-radius: {RADIUS.sm}px;
    selection-background-color: {c.highlight}; selection-color: {c.highlighted_text}; }}
QLineEdit, QAbstractSpinBox {{ padding: {SPACE.xs}px {SPACE.sm}px; }}
QPlainTextEdit, QTextEdit {{ padding: {SPACE.xs}px; }}
QTextBrowser {{ background: transparent; border: none; padding: 0; }}
QAbstractSpinBox QLineEdit, QComboBox QLineEdit {{ background: transparent; border: none; padding: 0; }}
QLineEdit:disabled, QAbstractSpinBox:disabled, QComboBox:disabled {{ color: {c.muted}; background: {c.window}; }}
QComboBox {{ background: {c.button}; padding: {SPACE.xs}px {SPACE.sm}px; }}
QComboBox:hover {{ background: {c.hover}; }}
QComboBox:editable {{ background: {c.base}; }}
QComboBox::drop-down {{ border: none; width: {SPACE.xl}px; }}
{_icon_rule('QComboBox::down-arrow', down, arrow)}
QAbstractSpinBox::up-button, QAbstractSpinBox::down-button {{ subcontrol-origin: border; width: {SPACE.xl}px;
    border: none; background: transparent; }}
QAbstractSpinBox::up-button {{ subcontrol-position: top right; }}
QAbstractSpinBox::down-button {{ subcontrol-position: bottom right; }}
QAbstractSpinBox::up-button:hover, QAbstractSpinBox::down-button:hover {{ background: {c.hover}; }}
{_icon_rule('QAbstractSpinBox::up-arrow', up, arrow)}
{_icon_rule('QAbstractSpinBox::down-arrow', down, arrow)}
{_icon_rule('QAbstractSpinBox::up-arrow:off, QAbstractSpinBox::up-arrow:disabled', up_off, arrow)}
{_icon_rule('QAbstractSpinBox::down-arrow:off, QAbstractSpinBox::down-arrow:disabled', down_off, arrow)}
QAbstractSpinBox {{ padding-right: {SPACE.xl}px; }}
QComboBox QAbstractItemView {{ background: {c.card}; border: 1px solid {c.border}; border-radius: 0;
    padding: {SPACE.xs}px; outline: 0; }}
QAbstractItemView {{ background: {c.base}; alternate-background-color: {c.alternate_base};
    border: 1px solid {c.border}; border-radius: {RADIUS.md}px;
    selection-background-color: {c.highlight}; selection-color: {c.highlighted_text}; outline: 0; }}
QListView::item {{ padding: {SPACE.xs}px {SPACE.sm}px; border-radius: {RADIUS.sm}px; }}
QListView::item:hover:!selected {{ background: {c.hover}; }}
QListView::item:selected {{ background: {c.highlight}; color: {c.highlighted_text}; }}
QTableView {{ gridline-color: {c.border}; }}
QHeaderView {{ background: transparent; border: none; }}
QHeaderView::section {{ background: transparent; color: {c.muted}; border: none;
    border-bottom: 1px solid {c.border}; padding: {SPACE.xs}px {SPACE.sm}px; font-weight: 600; }}
QTableCornerButton::section {{ background: transparent; border: none; }}
QScrollBar:vertical {{ background: transparent; width: {SPACE.md}px; margin: 0; border: none; }}
QScrollBar:horizontal {{ background: transparent; height: {SPACE.md}px; margin: 0; border: none; }}
QScrollBar::handle {{ background: {c.border}; border-radius: {SPACE.xs}px; margin: {SPACE.xxs}px; }}
QScrollBar::handle:vertical {{ min-height: {SPACE.xl}px; }}
QScrollBar::handle:horizontal {{ min-width: {SPACE.xl}px; }}
QScrollBar::handle:hover, QScrollBar::handle:pressed {{ background: {c.muted}; }}
QScrollBar::add-line, QScrollBar::sub-line {{ width: 0; height: 0; border: none; background: none; }}
QScrollBar::add-page, QScrollBar::sub-page {{ background: none; }}
QTabWidget::pane {{ border: none; border-top: 1px solid {c.border}; }}
QTabBar::tab {{ background: transparent; color: {c.muted}; border: none; border-bottom: 2px solid transparent;
    padding: {SPACE.sm}px {SPACE.lg}px; margin-right: {SPACE.xs}px; }}
QTabBar::tab:selected {{ color: {c.text}; border-bottom-color: {c.highlight}; }}
QTabBar::tab:hover:!selected {{ color: {c.text}; }}
QMenu {{ background: {c.card}; color: {c.text}; border: 1px solid {c.border}; padding: {SPACE.xs}px; }}
QMenu::item {{ padding: {SPACE.xs + 2}px {SPACE.xl}px {SPACE.xs + 2}px {SPACE.xl + SPACE.xs}px;
    border-radius: {RADIUS.sm}px; background: transparent; }}
QMenu::item:selected {{ background: {c.highlight}; color: {c.highlighted_text}; }}
QMenu::item:disabled {{ color: {c.muted}; }}
QMenu::separator {{ height: 1px; background: {c.border}; margin: {SPACE.xs}px {SPACE.sm}px; }}
QToolTip {{ background: {c.card}; color: {c.text}; border: 1px solid {c.border}; padding: {SPACE.xs}px {SPACE.sm}px; }}
QProgressBar {{ background: {c.kv_track}; color: {c.text}; border: none; border-radius: {SPACE.xs}px;
    text-align: center; }}
QProgressBar::chunk {{ background: {c.highlight}; border-radius: {SPACE.xs}px; }}
QCheckBox, QRadioButton {{ spacing: {SPACE.sm}px; }}
{boxes} {{ width: {ICON.inline}px; height: {ICON.inline}px; border: 1px solid {c.muted};
    border-radius: {SPACE.xs}px; background: {c.base}; }}
QCheckBox::indicator:hover, QAbstractItemView::indicator:hover {{ border-color: {c.text}; }}
{ticked} {{ background: {c.highlight}; border-color: {c.highlight}; }}
{_icon_rule(ticked, tick, "")}
QCheckBox::indicator:disabled, QAbstractItemView::indicator:disabled {{ background: {c.window};
    border-color: {c.border}; }}
QSplitter::handle {{ background: transparent; }}"""
