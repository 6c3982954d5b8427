"""The settings dialog, built from the settings schema.

Each editor comes from its field: the type gives the widget (a ``Literal`` a list of its
choices, ``int``/``float`` a spin box with the field's range, ``bool`` a check box), the
metadata its label, tooltip and range. Only the layout is written here. Rules between
fields (a quantised KV cache needs flash attention) are checked on every change: while
one is broken the dialog says which and OK is disabled, so it cannot produce settings
the engine would refuse.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.errors import InvalidSetting
from prefill.engine.local.kv_disk import Usage
from prefill.engine.setting_fields import choices, hints
from prefill.store.app_settings import SECTIONS, ModelSettings, Settings
from prefill.ui.shared.plain_text import plain_label

LAYOUT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Generation", ("sampling.temperature", "sampling.top_k", "sampling.top_p", "sampling.min_p",
                    "sampling.repeat_penalty", "sampling.repeat_last_n", "sampling.max_tokens", "sampling.seed",
                    "ui.max_tool_rounds")),
    ("Model", ("model.n_ctx", "model.n_gpu_layers", "model.flash_attn", "model.kv_type", "model.n_threads",
               "model.n_batch", "model.overflow_policy", "model.kv_disk_budget_mb", "model.speculative",
               "model.draft_model_path", "model.draft_max")),
    ("Downloads", ("ui.models_dir", "hub.hf_token")),
    ("Appearance", ("ui.theme",)),
)
# Kept as they are: set by the window itself, or (stop texts) by the file and the CLI.
NOT_IN_DIALOG = frozenset({"model.last_model_path", "ui.window_geometry", "ui.splitter_states", "sampling.stop",
                           "ui.tools_off"})  # the Tools dialog's checkboxes edit it
# Text fields that name a file: a "Choose…" button opens a file dialog with this filter.
FILE_FILTERS = {"model.draft_model_path": "GGUF models (*.gguf)"}
COUNT = "count"  # the combo entry of a "choice or a number" field that enables its spin box
INT_LIMIT = 2**31 - 1  # a QSpinBox holds a C int


class FieldEditor:
    """One setting's editor: `widget` goes in the form, `input` is what a person edits (for
    "a choice or a number", `input` is the combo and `spin` the number). `value()` gives the
    stored value back exactly while untouched (a spin box rounds to its decimals)."""

    def __init__(self, key: str, hint: Any, meta: dict[str, Any], value: Any, on_change: Callable[[], None]):
        self.key, self.meta, self.original = key, meta, value
        self.label = meta.get("label") or key.partition(".")[2]
        self.input: QWidget
        self._read: Callable[[], Any]
        self.widget = self._build(hint, value, on_change)
        self.widget.setToolTip(meta["doc"])
        self._initial = self._read()

    def value(self) -> Any:
        now = self._read()
        return self.original if now == self._initial else now

    def _build(self, hint: Any, value: Any, on_change: Callable[[], None]) -> QWidget:
        words = choices(hint)
        numeric = hint in (int, float) or (words and int in getattr(hint, "__args__", ()))
        if hint is bool:
            check = QCheckBox(self.label)
            check.setChecked(value)
            check.toggled.connect(on_change)
            self.input, self._read = check, check.isChecked
            return check
        if words:
            combo = QComboBox()
            combo.addItems([*words, COUNT] if numeric else list(words))
            combo.setCurrentText(value if isinstance(value, str) else COUNT)
            combo.currentTextChanged.connect(on_change)
            self.input = combo
            if not numeric:
                self._read = combo.currentText
                return combo
            spin = self.spin = self._int_spin(value if isinstance(value, int) else 0, on_change)
            combo.currentTextChanged.connect(lambda t: spin.setEnabled(t == COUNT))
            spin.setEnabled(combo.currentText() == COUNT)
            self._read = lambda: spin.value() if combo.currentText() == COUNT else combo.currentText()
            return _row(combo, spin)
        if hint is int:
            spin = self._int_spin(value, on_change)
            self.input, self._read = spin, spin.value
            return spin
        if hint is float:
            dspin = self._float_spin(value, on_change)
            self.input, self._read = dspin, dspin.value
            return dspin
        line = QLineEdit(value)
        line.textChanged.connect(on_change)
        self.input, self._read = line, lambda: line.text().strip()
        if self.meta.get("secret"):
            line.setEchoMode(QLineEdit.EchoMode.Password)
        if not self.meta.get("folder") and self.key not in FILE_FILTERS:
            return line
        browse = QPushButton("Choose…")
        browse.clicked.connect(lambda: self._on_browse_clicked(line))
        return _row(line, browse)

    def _int_spin(self, value: int, on_change: Callable[[], None]) -> QSpinBox:
        spin = QSpinBox()
        low, high = self.meta.get("min"), self.meta.get("max")
        spin.setRange(int(low) if low is not None else -INT_LIMIT, int(high) if high is not None else INT_LIMIT)
        spin.setValue(value)
        spin.valueChanged.connect(on_change)
        return spin

    def _float_spin(self, value: float, on_change: Callable[[], None]) -> QDoubleSpinBox:
        spin = QDoubleSpinBox()
        step = self.meta.get("step") or 0.1
        low, above, high = self.meta.get("min"), self.meta.get("above"), self.meta.get("max")
        spin.setDecimals(2 if step >= 0.01 else 4)
        spin.setSingleStep(step)
        spin.setRange(low if low is not None else (above + step if above is not None else -1e9),
                      high if high is not None else 1e9)
        spin.setValue(value)
        spin.valueChanged.connect(on_change)
        return spin

    def _on_browse_clicked(self, line: QLineEdit) -> None:
        if self.key in FILE_FILTERS:
            chosen, _ = QFileDialog.getOpenFileName(self.widget, self.label, line.text(), FILE_FILTERS[self.key])
        else:
            chosen = QFileDialog.getExistingDirectory(self.widget, self.label, line.text())
        if chosen:
            line.setText(chosen)


def _row(main: QWidget, side: QWidget) -> QWidget:
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.addWidget(main, 1)
    row.addWidget(side)
    return box


class SettingsDialog(QDialog):
    """Edits one Settings value; `result_settings()` is the edited value (checked).

    Signals:
        clear_cache_requested(): the user asked to delete every saved KV cache.
    """

    clear_cache_requested = Signal()

    def __init__(self, settings: Settings, parent: QWidget | None = None, cache_usage: Usage | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.original = settings
        self.editors: dict[str, FieldEditor] = {}
        tabs = QTabWidget()
        for title, keys in LAYOUT:
            page = QWidget()
            form = QFormLayout(page)
            for key in keys:
                editor = self._editor(key)
                form.addRow(plain_label("" if isinstance(editor.widget, QCheckBox) else editor.label), editor.widget)
            if title == "Model":  # what the saved chat caches hold now, and a way to drop them
                self.cache_use = plain_label()
                clear = QPushButton("Clear")
                clear.setObjectName("clear-cache")
                clear.clicked.connect(self.clear_cache_requested)
                form.addRow(plain_label("Saved chat caches"), _row(self.cache_use, clear))
            tabs.addTab(page, title)
        self.cache_budget = self.editors["model.kv_disk_budget_mb"].input
        speculative = self.editors["model.speculative"].input
        assert isinstance(speculative, QComboBox)
        speculative.currentTextChanged.connect(self._on_speculative_changed)
        self._on_speculative_changed(speculative.currentText())
        self.set_cache_usage(cache_usage)
        self.problem = plain_label()
        self.problem.setObjectName("settings-problem")
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(tabs)
        lay.addWidget(self.problem)
        lay.addWidget(self.buttons)

    def _editor(self, key: str) -> FieldEditor:
        section_name, _, name = key.partition(".")
        section = SECTIONS[section_name]
        item = {f.name: f for f in dataclasses.fields(section)}[name]  # type: ignore[arg-type]
        value = getattr(getattr(self.original, section_name), name)
        editor = FieldEditor(key, hints(section)[name], dict(item.metadata), value, self._on_editor_changed)
        self.editors[key] = editor
        return editor

    def result_settings(self) -> Settings:
        """The edited settings.

        Raises:
            InvalidSetting: The edits break a rule (OK is disabled meanwhile).
        """
        return self.original.with_values({key: e.value() for key, e in self.editors.items()})

    def check(self) -> str:
        """Why the edited settings cannot be used, in words ("" when they can)."""
        try:
            self.result_settings()
        except InvalidSetting as e:
            editor = self.editors.get(e.key)
            return f"{editor.label if editor else e.key}: {e.reason}."
        return ""

    def accept(self) -> None:
        if not self.check():
            super().accept()

    def set_cache_usage(self, usage: Usage | None) -> None:
        self.cache_use.setText("" if usage is None else f"{usage.bytes / 1024**3:.2f} GB in {usage.files} files")

    def _on_speculative_changed(self, mode: str) -> None:
        # What does not apply to the mode chosen is greyed out (and kept as it is).
        self.editors["model.draft_model_path"].widget.setEnabled(mode == "draft")
        self.editors["model.draft_max"].widget.setEnabled(mode != "off")

    def _on_editor_changed(self, *_args: object) -> None:
        problem = self.check()
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problem)


def needs_reload(old: ModelSettings, new: ModelSettings) -> bool:
    """Whether a change of model settings takes a reload of the model: any load setting. (Speculative
    decoding is set on the loaded engine: its mode and draft length at once, a draft model loaded beside it.)"""
    return old.load_settings() != new.load_settings()
