"""The selected repository's files on the Models page: one row per model, grouped by quantisation.

Each model row shows its size, whether it is on this machine already ("Downloaded",
matched against the library by where a download of it lands) and its fit badge
(`fit_badge.FitBadge`, an item widget, so the figures are in view). A projector is a
child row of the model it is downloaded with.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem

from prefill.engine.units import format_bytes
from prefill.hub.library import LocalModel
from prefill.hub.quants import ModelFiles, group_by_quant
from prefill.ui.models.fit_badge import FitBadge
from prefill.ui.models.fit_chip import theme_colours
from prefill.ui.widgets.plain_text import tooltip
from prefill.ui.widgets.tokens import SPACE

MODEL_ROLE = Qt.ItemDataRole.UserRole
NAME, SIZE, HERE, FIT = range(4)
DOWNLOADED = "✓ Downloaded"
DOWNLOADING = "Downloading…"


def make_tree() -> QTreeWidget:
    tree = QTreeWidget()
    tree.setObjectName("repo-files")
    tree.setAccessibleName("Files of the repository")
    tree.setHeaderLabels(["Model", "Size", "Here", "Fit on this machine"])
    tree.header().setStretchLastSection(True)
    tree.setColumnWidth(NAME, SPACE.xxl * 7)
    tree.header().setSectionResizeMode(SIZE, QHeaderView.ResizeMode.ResizeToContents)  # "113.2 KiB" whole
    tree.setColumnWidth(HERE, SPACE.xxl * 3 + SPACE.xs)
    tree.setUniformRowHeights(False)
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
        group = QTreeWidgetItem([f"{quant}  ({len(group_models)})", format_bytes(total), "", ""])
        group.setFlags(group.flags() & ~Qt.ItemFlag.ItemIsSelectable)
        tree.addTopLevelItem(group)
        for m in group_models:
            item = QTreeWidgetItem([m.name, format_bytes(m.size), "", ""])
            item.setData(NAME, MODEL_ROLE, m)
            item.setToolTip(NAME, tooltip("\n".join(p.filename for p in m.files)))
            group.addChild(item)
            if m.projector is not None:  # downloaded with the model, so it can see images
                proj = QTreeWidgetItem([f"+ projector {m.projector.filename}", format_bytes(m.projector.size), "",
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
    return rows


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
            item.setText(HERE, DOWNLOADED)
            item.setForeground(HERE, QColor(theme_colours().fit_good))
            item.setToolTip(HERE, "Already on this machine: listed under On this machine")
        else:
            item.setText(HERE, DOWNLOADING if m.name in downloading else "")
            item.setToolTip(HERE, "")
