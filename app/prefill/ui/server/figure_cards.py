"""The Server panel's cards of figures: a small title over rows with a label on the left and a value on
the right, as the sidebar's cards show a chat's figures; and the prompt cache's figures as such rows.

Model names and values are shown as plain text (a model's id comes from its file or the pool's list).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFormLayout, QFrame, QLabel, QVBoxLayout

from prefill.engine.batch.prompt_cache import PromptCacheSnapshot
from prefill.engine.units import format_bytes
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import SPACE

Rows = tuple[tuple[str, str], ...]  # (label, value) in the order shown


def count(n: int, word: str) -> str:
    """`n` and `word`, in the plural unless it is one: "3 prompts", "1 hit"."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def cache_rows(cache: PromptCacheSnapshot) -> Rows:
    """One model's prompt cache as label/value rows: what it keeps (prompts, bytes of its bound), what
    it saved (hits, tokens), and what it keeps on disk when it has a disk tier; ("", "Off") when off."""
    if cache.limit <= 0:
        return (("", "Off"),)
    rows = [("Kept", f"{count(cache.entries, 'prompt')} · {format_bytes(cache.bytes)} of "
                     f"{format_bytes(cache.limit)}"),
            ("Reused", f"{count(cache.hits, 'hit')} · {count(cache.tokens_saved, 'token')} saved")]
    if cache.disk_limit:
        rows.append(("On disk", f"{cache.disk_entries:,} ({format_bytes(cache.disk_bytes)} of "
                                f"{format_bytes(cache.disk_limit)})"))
    return tuple(rows)


class FiguresCard(QFrame):
    """A card: `title` over label/value rows (`set_rows`); a row with no label spans the card."""

    def __init__(self, title: str = "") -> None:
        super().__init__()
        self.setObjectName("server-card")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.sm, SPACE.md, SPACE.sm)
        lay.setSpacing(SPACE.xs)
        self.title = plain_label(title)
        self.title.setObjectName("server-card-title")
        lay.addWidget(self.title)
        self.form = QFormLayout()
        self.form.setContentsMargins(0, 0, 0, 0)
        self.form.setHorizontalSpacing(SPACE.md)
        self.form.setVerticalSpacing(SPACE.xxs)
        self.form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        lay.addLayout(self.form)
        self._shown: Rows = ()
        self._values: list[QLabel] = []

    def rows(self) -> Rows:
        """The rows shown, as (label, value)."""
        return self._shown

    def set_rows(self, rows: Rows) -> None:
        """Show `rows`; the same labels as before only change their values (no new layout)."""
        if [label for label, _ in rows] != [label for label, _ in self._shown]:
            while self.form.rowCount():
                self.form.removeRow(0)
            self._values = []
            for label, _ in rows:
                value = plain_label()
                value.setObjectName("server-figure-value")
                value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if label:
                    name = plain_label(label)
                    name.setObjectName("server-figure-label")
                    self.form.addRow(name, value)
                else:
                    value.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
                    self.form.addRow(value)
                self._values.append(value)
        for value, (_, text) in zip(self._values, rows, strict=True):
            value.setText(text)
        self._shown = rows
