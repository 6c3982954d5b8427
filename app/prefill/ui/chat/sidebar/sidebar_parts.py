"""The sidebar's building blocks: a card of figures (label left, value right, on one line) and the
headline over the speed plot (the writing speed and the first word, large).

A figure with nothing to say is left out of its card, not shown as a dash.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QBoxLayout, QFormLayout, QFrame, QLabel, QToolButton, QVBoxLayout, QWidget

from prefill.ui.chat.sidebar.sidebar_words import FIGURES, Words
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.tokens import ICON, SPACE


class FigureCard(QFrame):
    """A card of figures under a small title: each a row with its label on the left and its value on
    the right, wrapped within its column when long. A row whose value is empty is hidden; with
    `auto_hide`, so is the card while none of its rows has a value."""

    def __init__(self, title: Words | None = None, auto_hide: bool = False) -> None:
        super().__init__()
        self.setObjectName("sidebar-card")
        self._auto_hide = auto_hide
        self._values: list[QLabel] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.sm, SPACE.md, SPACE.sm)
        lay.setSpacing(SPACE.xs)
        self.title = plain_label(title.label if title is not None else "")
        self.title.setObjectName("sidebar-card-title")
        self.title.setToolTip(tooltip(title.tip) if title is not None else "")
        self.title.setVisible(title is not None)
        lay.addWidget(self.title)
        self.form = QFormLayout()
        self.form.setContentsMargins(0, 0, 0, 0)
        self.form.setHorizontalSpacing(SPACE.md)
        self.form.setVerticalSpacing(SPACE.xs)
        self.form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)  # label beside value (`set_narrow`)
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        lay.addLayout(self.form)
        self.setHidden(auto_hide)  # until a figure has a value

    def set_narrow(self, narrow: bool) -> None:
        """Narrow (a side panel squeezed under `COLUMN.side_min_width`): each value under its label, as
        there is no room beside it; else beside it, on one line."""
        policy = QFormLayout.RowWrapPolicy.WrapAllRows if narrow else QFormLayout.RowWrapPolicy.DontWrapRows
        if self.form.rowWrapPolicy() != policy:
            self.form.setRowWrapPolicy(policy)

    def figure(self, key: str, words: Words | None = None) -> QLabel:
        """A row for the figure `key`, labelled and explained from the words table; hidden until set."""
        words = words or FIGURES[key]
        value = plain_label()
        value.setObjectName(f"stat-{key}")
        value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        value.setWordWrap(True)  # a long figure wraps in its column instead of being cut off
        value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        title = plain_label(words.label)
        title.setObjectName("figure-label")
        if words.tip:
            value.setToolTip(tooltip(words.tip))
            title.setToolTip(tooltip(words.tip))
        self.form.addRow(title, value)
        self.form.setRowVisible(value, False)
        self._values.append(value)
        return value

    def note(self, name: str) -> QLabel:
        """A line across the card (a warning, a note), hidden until set."""
        label = plain_label()
        label.setObjectName(name)
        label.setWordWrap(True)
        self.form.addRow(label)
        self.form.setRowVisible(label, False)
        self._values.append(label)
        return label

    def row(self, widget: QWidget) -> None:
        """A widget across the card (a bar, a strip)."""
        self.form.addRow(widget)

    def set(self, value: QLabel, text: str) -> None:
        """`value`'s figure: shown with `text`, or its row left out when there is none."""
        was = bool(value.text())
        value.setText(text)
        if was == bool(text):
            return  # the row stays as it is: no new layout for a figure that only changed
        self.form.setRowVisible(value, bool(text))
        if self._auto_hide:
            self.setVisible(any(v.text() for v in self._values))


class Headline(QFrame):
    """The writing speed and the time to the first word, large, over the plot; or, with no figures,
    a line saying why (no answer yet, one coming, one refused)."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("sidebar-headline")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.md, SPACE.md, SPACE.sm)
        lay.setSpacing(SPACE.xs)
        self.figures = QWidget()
        row = self._row = QBoxLayout(QBoxLayout.Direction.LeftToRight, self.figures)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(SPACE.xl)
        self.speed, self._speed = _stat(FIGURES["decode"])
        self.first_word, self._first = _stat(FIGURES["ttft"])
        row.addWidget(self._speed)
        row.addWidget(self._first)
        row.addStretch(1)
        lay.addWidget(self.figures)
        self.state = plain_label()
        self.state.setObjectName("headline-state")
        self.state.setWordWrap(True)
        self.state.hide()
        lay.addWidget(self.state)
        lay.addSpacing(SPACE.xs)  # the plot's scale clear of the captions
        self.body = lay  # the plot goes under the figures

    def side_by_side_width(self) -> int:
        """The width the two figures need beside each other, margins included."""
        return self._speed.sizeHint().width() + self._first.sizeHint().width() + SPACE.xl + 2 * SPACE.md

    def set_narrow(self, narrow: bool) -> None:
        """Narrow: the first word under the writing speed, not beside it."""
        if (self._row.direction() == QBoxLayout.Direction.TopToBottom) == narrow:
            return
        self._row.setDirection(QBoxLayout.Direction.TopToBottom if narrow else QBoxLayout.Direction.LeftToRight)
        self._row.setSpacing(SPACE.xs if narrow else SPACE.xl)

    def show_figures(self) -> None:
        """Each figure with a value shown, with its caption; the row goes when neither has one."""
        self._speed.setVisible(bool(self.speed.text()))
        self._first.setVisible(bool(self.first_word.text()))
        self.figures.setVisible(bool(self.speed.text() or self.first_word.text()))

    def set_state(self, text: str) -> None:
        """Why no figures show ("" hides the line)."""
        self.state.setText(text)
        self.state.setVisible(bool(text))


def _stat(words: Words) -> tuple[QLabel, QWidget]:
    """A large value over its small caption, both explained on hover."""
    value = plain_label()
    value.setObjectName("headline-value")
    value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    caption = plain_label(words.label)
    caption.setObjectName("headline-caption")
    for part in (value, caption):
        part.setToolTip(tooltip(words.tip))
    column = QWidget()
    lay = QVBoxLayout(column)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(0)
    lay.addWidget(value)
    lay.addWidget(caption)
    return value, column


class Disclosure(QToolButton):
    """A folded part's switch: its title beside a chevron, right when folded, down when open."""

    def __init__(self, words: Words) -> None:
        super().__init__()
        self.setObjectName("sidebar-disclosure")
        self.setText(words.label)
        self.setToolTip(tooltip(words.tip))
        self.setCheckable(True)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.setAutoRaise(True)
        self.setIconSize(QSize(ICON.inline, ICON.inline))
        self.toggled.connect(self._on_toggled)
        self._on_toggled(False)

    def _on_toggled(self, on: bool) -> None:
        self.setIcon(icon("chevron-down" if on else "chevron-right"))
        self.setAccessibleName(f"{self.text()}: {'open' if on else 'folded'}")
