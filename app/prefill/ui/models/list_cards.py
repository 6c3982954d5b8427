"""Lists of cards, painted: the Models page's search results and library, and the model finder.

A `Card` is plain data (a title, a few muted lines, a fit chip, a mark before the title); `CardModel`
holds them in a `QAbstractListModel`, and `CardDelegate` paints each as a rounded card, so a hundred
results cost a hundred paints of what is in view and no widget each. Text from outside (a repository's
name, a file's) is painted as text: nothing here is ever read as markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QRectF,
    QSize,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QAbstractItemView, QListView, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from prefill.ui.models.fit_chip import CHIP_WORDS, chip_font, chip_size, paint_chip, theme_colours
from prefill.ui.widgets.plain_text import tooltip
from prefill.ui.widgets.tokens import RADIUS, SPACE, TYPE

CARD_ROLE = Qt.ItemDataRole.UserRole + 1
SEARCH_ROLE = Qt.ItemDataRole.UserRole + 2
Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Card:
    """One card's words.

    Attributes:
        key: what the card stands for (a repository id, a model's path), for whoever reads a choice.
        title: the first line, bold.
        lines: the muted lines under it.
        verdict: the fit chip's verdict name (fit_chip.py), "" for no chip.
        chip: the chip's words ("" for the verdict's own).
        mark: before the title (the finder's resident dot), "" for none.
        hover: the tooltip, plain text.
        payload: whatever the list's owner keeps with it (a `Suggestion`, a `LocalModel`).
    """

    key: str
    title: str
    lines: tuple[str, ...] = ()
    verdict: str = ""
    chip: str = ""
    mark: str = ""
    hover: str = ""
    payload: object = field(default=None, compare=False)

    @property
    def chip_words(self) -> str:
        return self.chip or CHIP_WORDS.get(self.verdict, "")

    def text(self) -> str:
        """Everything it says, on one line (what a screen reader and a filter read)."""
        return " · ".join(p for p in (self.mark, self.title, *self.lines, self.chip_words) if p)


class CardModel(QAbstractListModel):
    """The cards of one list, replaced whole (`set_cards`) or one at a time (`replace`)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.cards: list[Card] = []

    def set_cards(self, cards: list[Card]) -> None:
        self.beginResetModel()
        self.cards = list(cards)
        self.endResetModel()

    def replace(self, row: int, card: Card) -> None:
        self.cards[row] = card
        index = self.index(row)
        self.dataChanged.emit(index, index)

    def row_of(self, key: str) -> int:
        return next((i for i, c in enumerate(self.cards) if c.key == key), -1)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802 - Qt's name
        return 0 if parent.isValid() else len(self.cards)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self.cards):
            return None
        card = self.cards[index.row()]
        if role == CARD_ROLE:
            return card
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return card.text()
        if role == SEARCH_ROLE:
            return f"{card.title} {' '.join(card.lines)} {card.key}".lower()
        if role == Qt.ItemDataRole.ToolTipRole:
            return tooltip(card.hover) if card.hover else None
        return None


class WordsFilter(QSortFilterProxyModel):
    """Keeps the cards whose words hold every word typed, in any order ("llama q4" finds
    "Llama 3.2 1B Instruct · Q4_K_M")."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._words: list[str] = []

    def set_words(self, text: str) -> None:
        self.beginFilterChange()
        self._words = text.lower().split()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, row: int, parent: Index) -> bool:  # noqa: N802 - Qt's name
        text = self.sourceModel().index(row, 0, parent).data(SEARCH_ROLE) or ""
        return all(w in text for w in self._words)


class CardDelegate(QStyledItemDelegate):
    """Paints a `Card`: a rounded card, the title on the first line, the muted lines under it, and the fit
    chip at the end of the last line (beside the size it rests on)."""

    def _fonts(self, option: QStyleOptionViewItem) -> tuple[QFont, QFont, QFont]:
        title = QFont(option.font)
        title.setPixelSize(TYPE.body)
        title.setWeight(QFont.Weight.DemiBold)
        small = QFont(option.font)
        small.setPixelSize(TYPE.small)
        return title, small, chip_font(option.font)

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:  # noqa: N802 - Qt's name
        card = index.data(CARD_ROLE)
        title, small, _chip = self._fonts(option)
        lines = len(card.lines) if isinstance(card, Card) else 0
        height = 2 * SPACE.md + QFontMetrics(title).height() + lines * (QFontMetrics(small).height() + SPACE.xxs)
        return QSize(SPACE.xxl * 8, height + SPACE.xs)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        card = index.data(CARD_ROLE)
        if not isinstance(card, Card):
            return
        c = theme_colours()
        state = option.state
        selected = bool(state & QStyle.StateFlag.State_Selected)
        hovered = bool(state & QStyle.StateFlag.State_MouseOver)
        rect: QRect = option.rect.adjusted(0, 0, 0, -SPACE.xs)  # the gap below
        title_font, small, chip = self._fonts(option)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(c.highlight if selected else c.border), 2 if selected else 1))
        painter.setBrush(QColor(c.user_bubble if selected else c.alternate_base if hovered else c.card))
        painter.drawRoundedRect(QRectF(rect).adjusted(1, 1, -1, -1), RADIUS.md, RADIUS.md)
        inner = rect.adjusted(SPACE.md, SPACE.md, -SPACE.md, -SPACE.md)
        top, right = inner.top(), inner.right()
        title_m, small_m = QFontMetrics(title_font), QFontMetrics(small)
        last_right = right  # the chip sits at the end of the last line, so the title keeps the whole width
        if card.verdict:
            line_h = small_m.height() + SPACE.xxs
            chip_top = top + title_m.height() + SPACE.xxs + max(0, len(card.lines) - 1) * line_h
            chip_top -= (chip_size(chip, card.chip_words)[1] - small_m.height()) // 2
            placed = paint_chip(painter, right, chip_top if card.lines else top, card.chip_words, card.verdict,
                                chip, c)
            if card.lines:
                last_right = placed.left() - SPACE.sm
            else:
                right = placed.left() - SPACE.sm
        x = inner.left()
        painter.setPen(QColor(c.text))
        if card.mark:
            painter.setFont(title_font)
            painter.setPen(QColor(c.kv_green))
            painter.drawText(QRect(x, top, right - x, title_m.height()), Qt.AlignmentFlag.AlignVCenter, card.mark)
            x += title_m.horizontalAdvance(card.mark + " ")
            painter.setPen(QColor(c.text))
        painter.setFont(title_font)
        title = title_m.elidedText(card.title, Qt.TextElideMode.ElideRight, max(0, right - x))
        painter.drawText(QRect(x, top, right - x, title_m.height()), Qt.AlignmentFlag.AlignVCenter, title)
        painter.setFont(small)
        painter.setPen(QColor(c.muted))
        y = top + title_m.height() + SPACE.xxs
        for i, line in enumerate(card.lines):
            width = (last_right if i == len(card.lines) - 1 else right) - inner.left()
            text = small_m.elidedText(line, Qt.TextElideMode.ElideRight, max(0, width))
            painter.drawText(QRect(inner.left(), y, max(0, width), small_m.height()), Qt.AlignmentFlag.AlignVCenter,
                             text)
            y += small_m.height() + SPACE.xxs
        painter.restore()


def card_list(name: str, accessible: str, model: CardModel | QSortFilterProxyModel) -> QListView:
    """A list view of cards: one selected at a time, scrolled by pixels, its cards as wide as it is."""
    view = QListView()
    view.setObjectName(name)
    view.setAccessibleName(accessible)
    view.setModel(model)
    view.setItemDelegate(CardDelegate(view))
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setMouseTracking(True)  # the hovered card is drawn lighter
    view.setUniformItemSizes(False)
    view.setSpacing(0)
    return view
