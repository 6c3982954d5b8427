"""The selected repository's files on the Models page: one row per model, grouped by quantisation.

Each model row shows its size, whether it is on this machine already ("Downloaded",
matched against the library by where a download of it lands) and its fit badge
(`fit_badge.FitBadge`, an item widget, so the figures are in view). A projector is a
child row of the model it is downloaded with.

It reads as a list, not a grid: no frame, no branch arrows (every group stays open), the column
names and each quantisation's heading in caption type, sizes to the right. `FileRows` paints the
headings muted and "Downloaded" in the fit colour, both read from the theme at paint time.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeWidget,
    QTreeWidgetItem,
)

from prefill.engine.units import format_bytes
from prefill.hub.library import LocalModel
from prefill.hub.quants import ModelFiles, group_by_quant
from prefill.ui.models.fit_badge import FitBadge
from prefill.ui.models.fit_chip import theme_colours
from prefill.ui.widgets.plain_text import tooltip
from prefill.ui.widgets.tokens import SPACE, TYPE

MODEL_ROLE = Qt.ItemDataRole.UserRole
NAME, SIZE, HERE, FIT = range(4)
DOWNLOADED = "✓ Downloaded"
DOWNLOADING = "Downloading…"
NARROW = 640  # pixels of list below which the "Here" column is hidden (Download still says Downloaded)
NAME_SHARE = 0.45  # of the width left by the size (and "Here"): the most the names take; the fit gets the rest


class FileRows(QStyledItemDelegate):
    """A quantisation's heading in caption type, muted; "Downloaded" in the fit colour (the theme's, now)."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:  # noqa: N802
        super().initStyleOption(option, index)
        c = theme_colours()
        if not index.parent().isValid():  # a heading
            font = QFont(option.font)
            font.setPixelSize(TYPE.caption)
            font.setWeight(QFont.Weight.DemiBold)
            option.font = font
            option.palette.setColor(QPalette.ColorRole.Text, QColor(c.muted))
        elif index.column() == HERE and index.data() == DOWNLOADED:
            option.palette.setColor(QPalette.ColorRole.Text, QColor(c.fit_good))

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802
        """Rows with air between them. (Not a style sheet's item padding: that would squeeze the fit badge, an
        item widget, to the row less its padding, and its chip would lose its round ends.)"""
        size = super().sizeHint(option, index)
        size.setHeight(size.height() + 2 * SPACE.xs)
        return size


def make_tree() -> QTreeWidget:
    tree = QTreeWidget()
    tree.setObjectName("repo-files")
    tree.setAccessibleName("Files of the repository")
    tree.setHeaderLabels(["Model", "Size", "Here", "Fit on this machine"])
    tree.headerItem().setTextAlignment(SIZE, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    tree.header().setStretchLastSection(True)
    tree.header().setSectionsClickable(False)
    tree.header().setHighlightSections(False)
    tree.setColumnWidth(NAME, SPACE.xxl * 7)
    tree.header().setSectionResizeMode(SIZE, QHeaderView.ResizeMode.ResizeToContents)  # "113.2 KiB" whole
    tree.header().setSectionResizeMode(HERE, QHeaderView.ResizeMode.ResizeToContents)  # "✓ Downloaded" whole
    tree.setUniformRowHeights(False)
    tree.setRootIsDecorated(False)  # a list with headings: no arrows, every group open
    tree.setItemsExpandable(False)
    tree.setExpandsOnDoubleClick(False)  # a double click downloads (page.py)
    tree.setIndentation(SPACE.lg)
    tree.setAllColumnsShowFocus(True)
    tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # "Tiny-Chat…Q4_K_M.gguf": the quantisation stays
    tree.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the columns share the width
    tree.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    tree.setItemDelegate(FileRows(tree))
    return tree


def library_keys(models: Iterable[LocalModel]) -> set[str]:
    """What the library holds, as `owner/name/file` (a download's place, or the HF cache's)."""
    return {m.name.removeprefix("hf-cache:") for m in models if m.error is None}


def is_downloaded(keys: set[str], repo_id: str, m: ModelFiles) -> bool:
    return f"{repo_id}/{m.first.filename}" in keys


def fill_tree(tree: QTreeWidget, models: list[ModelFiles]) -> list[tuple[ModelFiles, QTreeWidgetItem]]:
    """Rows for every model; returns the model rows (the ones that get a fit badge)."""
    rows: list[tuple[ModelFiles, QTreeWidgetItem]] = []
    for quant, group_models in group_by_quant(models).items():
        sizes = [m.size for m in group_models]
        total = None if None in sizes else sum(s or 0 for s in sizes)
        heading = quant + (f" · {len(group_models)} models" if len(group_models) > 1 else "")
        group = _row([heading, format_bytes(total), "", ""])
        group.setFlags(group.flags() & ~Qt.ItemFlag.ItemIsSelectable)
        tree.addTopLevelItem(group)
        for m in group_models:
            item = _row([m.name, format_bytes(m.size), "", ""])
            item.setData(NAME, MODEL_ROLE, m)
            item.setToolTip(NAME, tooltip("\n".join(p.filename for p in m.files)))
            group.addChild(item)
            if m.projector is not None:  # downloaded with the model, so it can see images
                proj = _row([f"+ projector {m.projector.filename}", format_bytes(m.projector.size), "",
                             "images: downloaded with the model"])
                proj.setFlags(proj.flags() & ~Qt.ItemFlag.ItemIsSelectable)
                item.addChild(proj)
                item.setExpanded(True)
            if m.is_projector:
                item.setText(FIT, "vision projector (loads with its model)")
            elif not m.complete:
                item.setText(FIT, "incomplete set: parts are missing")
            else:
                tree.setItemWidget(item, FIT, FitBadge())
                rows.append((m, item))
        group.setExpanded(True)
    fit_columns(tree)
    return rows


def fit_columns(tree: QTreeWidget) -> None:
    """The names as wide as the longest needs, up to NAME_SHARE of the width (cut in the middle past it, so
    the quantisation stays), and the fit the rest; a narrow list hides "Here", so the fit chip stays."""
    width = tree.viewport().width()
    narrow = width < NARROW
    tree.setColumnHidden(HERE, narrow)
    fixed = tree.columnWidth(SIZE) + (0 if narrow else tree.columnWidth(HERE))
    metrics = tree.fontMetrics()
    need = max((metrics.horizontalAdvance(i.text(NAME)) for i in model_items(tree)), default=0)
    need += tree.indentation() + 2 * SPACE.sm
    tree.setColumnWidth(NAME, max(SPACE.xxl * 4, min(need, int((width - fixed) * NAME_SHARE))))


def _row(texts: list[str]) -> QTreeWidgetItem:
    """A row of the list, its size to the right."""
    item = QTreeWidgetItem(texts)
    item.setTextAlignment(SIZE, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def badge(tree: QTreeWidget, item: QTreeWidgetItem) -> FitBadge | None:
    w = tree.itemWidget(item, FIT)
    return w if isinstance(w, FitBadge) else None


def model_items(tree: QTreeWidget) -> list[QTreeWidgetItem]:
    """Every model row (the children of the quantisation groups)."""
    groups = [g for i in range(tree.topLevelItemCount()) if (g := tree.topLevelItem(i)) is not None]
    return [c for g in groups for j in range(g.childCount()) if (c := g.child(j)) is not None]


def mark(tree: QTreeWidget, repo_id: str, keys: set[str], downloading: set[str]) -> None:
    """Set each model row's "Here" cell: downloaded, downloading, or nothing."""
    for item in model_items(tree):
        m = item.data(NAME, MODEL_ROLE)
        if not isinstance(m, ModelFiles):
            continue
        if is_downloaded(keys, repo_id, m):
            item.setText(HERE, DOWNLOADED)  # in the fit colour (FileRows)
            item.setToolTip(HERE, "Already on this machine: listed under On this machine")
        else:
            item.setText(HERE, DOWNLOADING if m.name in downloading else "")
            item.setToolTip(HERE, "")
