"""One setting's editor, built from its field: the widget, its choices in words, its range, its fault.

The type gives the widget (a ``Literal`` a list of its choices, ``int``/``float`` a spin box,
``bool`` a check box), the metadata its label, tooltip and range. A choice shows in words
(``rolling_window`` reads "Drop the oldest messages") and keeps its raw value as the item's data.
A spin box takes any number, so a value out of range is kept as typed and explained beside the
field rather than refused keystroke by keystroke; the range is shown next to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from prefill.engine.setting_fields import choices
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import SPACE

COUNT = "count"  # the combo entry of a "choice or a number" field that enables its spin box
INT_LIMIT = 2**31 - 1  # a QSpinBox holds a C int
WIDE_DIGITS = 7  # the digits a number box without a maximum has room for
FLOAT_LIMIT = 1e9
# Text fields that name a file: a "Choose…" button opens a file dialog with this filter.
FILE_FILTERS = {"model.draft_model_path": "GGUF models (*.gguf)", "documents.embedding_model": "GGUF models (*.gguf)"}
# Each choice in words; the raw value is what is stored (and what the CLI and the file take).
CHOICE_WORDS: dict[str, str] = {
    "f16": "16-bit (default)",
    "q8_0": "8-bit: half the memory (flash attention auto or on)",
    "q4_0": "4-bit: a quarter of the memory (flash attention auto or on)",
    "auto": "Automatic: as many as fit",
    "all": "All layers",
    "none": "None: on the CPU only",
    COUNT: "This many:",
    "rolling_window": "Drop the oldest messages",
    "truncate_middle": "Drop messages from the middle",
    "stop": "Stop and say so",
    "summarise": "Summarise the earlier turns",
    "off": "Off",
    "ngram": "Guess from the text itself",
    "draft": "Guess with a draft model",
    "system": "As the system is set",
    "light": "Light",
    "dark": "Dark",
}
# A field whose choices read otherwise than CHOICE_WORDS has them ("auto" of the GPU layers).
FIELD_WORDS: dict[str, dict[str, str]] = {
    "model.flash_attn": {
        "auto": "Automatic: on where the backend supports it (default)",
        "on": "On",
        "off": "Off (no quantised KV cache, no speculation)",
    },
    "memory.budget_mb": {
        "auto": "What this machine has, less a margin (default)",
        "none": "No limit",
        COUNT: "This many MiB:",
    },
    "memory.idle_minutes": {
        "never": "Never: idle models stay",
        COUNT: "After this many minutes:",
    },
}
RELOAD_NOTE = "reloads the model"


def words_for(value: str, key: str = "") -> str:
    return FIELD_WORDS.get(key, {}).get(value) or CHOICE_WORDS.get(value, value)


def range_text(meta: dict[str, Any], is_int: bool) -> str:
    """The range a number takes, as a person reads it ("128 – 1,048,576"); "" when it takes any."""
    low, high, above = meta.get("min"), meta.get("max"), meta.get("above")

    def shown(v: float) -> str:
        return f"{int(v):,}" if is_int else f"{v:g}"

    if low is not None and high is not None:
        return f"{shown(low)} – {shown(high)}"
    if low is not None:
        return f"{shown(low)} or more"
    if above is not None:
        return f"above {shown(above)}" + (f", up to {shown(high)}" if high is not None else "")
    return f"up to {shown(high)}" if high is not None else ""


class FieldEditor:
    """One setting's editor: `widget` is the editor itself, `row` what goes in the form (the editor,
    its range and notes), `fault` what is wrong with its value (a row below it, `place`); `input` is what a
    person edits (for "a choice or a number", `input` is the combo and `spin` the number). `value()`
    gives the stored value back exactly while untouched (a spin box rounds to its decimals)."""

    def __init__(self, key: str, hint: Any, meta: dict[str, Any], value: Any, on_change: Callable[[], None],
                 note: str = ""):
        self.key, self.meta, self.original = key, meta, value
        self.label = meta.get("label") or key.partition(".")[2]
        self.input: QWidget
        self.spin: QSpinBox | None = None
        self._read: Callable[[], Any]
        self._write: Callable[[Any], None]
        self.widget = self._build(hint, value, on_change)
        self.widget.setToolTip(meta["doc"])
        self._initial = self._read()
        self.side = plain_label(note)  # the range, and whether a change reloads the model
        self.side.setObjectName("setting-side-note")
        self.side.setEnabled(False)  # drawn muted, as a hint
        self.side.setVisible(bool(note))
        self.fault = plain_label()
        self.fault.setObjectName("setting-fault")  # in the theme's danger colour (ui/widgets/styles/window.py)
        self.fault.hide()
        # A number's box is as wide as its numbers, its note beside it; a list or a text takes the row.
        self.row = side_by_side(self.widget, self.side, stretch=not isinstance(self.widget, QAbstractSpinBox))
        self.form: QFormLayout | None = None  # where `fault` has a row of its own (`place`)

    def value(self) -> Any:
        now = self._read()
        return self.original if now == self._initial else now

    def set_value(self, value: Any) -> None:
        """Show `value` (a stored value: a choice's raw word, a number)."""
        self._write(value)

    def place(self, form: QFormLayout, label: QWidget) -> None:
        """Add this editor to `form`: its label and row, and under them its fault (a row shown only when
        there is one)."""
        form.addRow(label, self.row)
        form.addRow(self.fault)
        form.setRowVisible(self.fault, False)
        self.form = form

    def show_fault(self, text: str) -> None:
        self.fault.setText(text)
        if self.form is not None:
            self.form.setRowVisible(self.fault, bool(text))
        else:
            self.fault.setVisible(bool(text))

    def _build(self, hint: Any, value: Any, on_change: Callable[[], None]) -> QWidget:
        words = choices(hint)
        numeric = hint in (int, float) or (words and int in getattr(hint, "__args__", ()))
        if hint is bool:
            check = QCheckBox(self.label)
            check.setChecked(value)
            check.toggled.connect(on_change)
            self.input, self._read, self._write = check, check.isChecked, check.setChecked
            return check
        if words:
            combo = QComboBox()
            for word in [*words, COUNT] if numeric else words:
                combo.addItem(words_for(word, self.key), word)
            combo.currentIndexChanged.connect(on_change)
            self.input = combo

            def pick(v: Any) -> None:
                combo.setCurrentIndex(max(combo.findData(v if isinstance(v, str) else COUNT), 0))
                if not isinstance(v, str) and self.spin is not None:
                    self.spin.setValue(int(v))

            if not numeric:
                self._read, self._write = combo.currentData, pick
                _quietly(combo, lambda: pick(value))
                return combo
            spin = self.spin = self._int_spin(value if isinstance(value, int) else 0, on_change)
            combo.currentIndexChanged.connect(lambda _i: spin.setEnabled(combo.currentData() == COUNT))
            _quietly(combo, lambda: pick(value))
            spin.setEnabled(combo.currentData() == COUNT)
            self._read = lambda: spin.value() if combo.currentData() == COUNT else combo.currentData()
            self._write = pick
            return side_by_side(combo, spin)
        if hint is int:
            spin = self._int_spin(value, on_change)
            self.input, self._read, self._write = spin, spin.value, spin.setValue
            return spin
        if hint is float:
            dspin = self._float_spin(value, on_change)
            self.input, self._read, self._write = dspin, dspin.value, dspin.setValue
            return dspin
        line = QLineEdit(value)
        line.textChanged.connect(on_change)
        self.input, self._read, self._write = line, lambda: line.text().strip(), line.setText
        if self.meta.get("secret"):
            line.setEchoMode(QLineEdit.EchoMode.Password)
        if not self.meta.get("folder") and self.key not in FILE_FILTERS:
            return line
        browse = QPushButton("Choose…")
        browse.clicked.connect(lambda: self._on_browse_clicked(line))
        return side_by_side(line, browse)

    def _int_spin(self, value: int, on_change: Callable[[], None]) -> QSpinBox:
        spin = QSpinBox()
        # Any number is taken; one outside the field's range is explained, not refused as typed.
        spin.setRange(-INT_LIMIT, INT_LIMIT)
        spin.setValue(value)
        spin.valueChanged.connect(on_change)
        fit_width(spin, self.widest())
        return spin

    def widest(self, decimals: int = 0) -> str:
        """The widest number the field takes, as digits: its box is as wide as that (not as a C int)."""
        high, low = self.meta.get("max"), self.meta.get("min")
        digits = len(str(int(high))) if high is not None else WIDE_DIGITS
        return ("-" if low is not None and low < 0 else "") + "8" * digits + ("." + "8" * decimals if decimals else "")

    def _float_spin(self, value: float, on_change: Callable[[], None]) -> QDoubleSpinBox:
        spin = QDoubleSpinBox()
        step = self.meta.get("step") or 0.1
        spin.setDecimals(2 if step >= 0.01 else 4)
        spin.setSingleStep(step)
        spin.setRange(-FLOAT_LIMIT, FLOAT_LIMIT)
        spin.setValue(value)
        spin.valueChanged.connect(on_change)
        fit_width(spin, self.widest(spin.decimals()))
        return spin

    def _on_browse_clicked(self, line: QLineEdit) -> None:
        if self.key in FILE_FILTERS:
            chosen, _ = QFileDialog.getOpenFileName(self.widget, self.label, line.text(), FILE_FILTERS[self.key])
        else:
            chosen = QFileDialog.getExistingDirectory(self.widget, self.label, line.text())
        if chosen:
            line.setText(chosen)


def fit_width(spin: QSpinBox | QDoubleSpinBox, widest: str) -> None:
    """Cap `spin`'s width at what `widest` (its widest number) takes with its prefix and suffix, its
    margins and its arrows; a longer number still fits by scrolling in the box."""
    text = f"{spin.prefix()}{widest}{spin.suffix()}"
    spin.setMaximumWidth(spin.fontMetrics().horizontalAdvance(text) + SPACE.xl + 3 * SPACE.sm)


def _quietly(widget: QWidget, change: Callable[[], None]) -> None:
    """Set an editor's first value without telling the dialog (it is not a change)."""
    widget.blockSignals(True)
    change()
    widget.blockSignals(False)


def side_by_side(main: QWidget, side: QWidget | QLabel, stretch: bool = True) -> QWidget:
    """`main` with `side` after it; `main` takes the room left unless not `stretch`."""
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(SPACE.sm)
    row.addWidget(main, 1 if stretch else 0)
    row.addWidget(side)
    if not stretch:
        row.addStretch(1)
    return box
