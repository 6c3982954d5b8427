"""The settings dialog, built from the settings schema.

Each editor comes from its field (``settings_editors``); only the layout is written here.
Rules between fields (a quantised KV cache needs flash attention) and ranges are checked on
every change: while one is broken the dialog says which, beside the field and below the
tabs, and OK is disabled, so it cannot produce settings the engine would refuse.

With a model file loaded, the Model tab's load settings and thinking budget are that model's own
(remembered per file, ``Settings.per_model``); "Use for all models" makes them the defaults instead,
and "Reset to defaults" shows the defaults again. Only a load setting says that a change reloads it.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.errors import InvalidSetting
from prefill.engine.local.kv_disk import Usage
from prefill.engine.setting_fields import hints
from prefill.hub.model_names import model_display_name
from prefill.session.loaded import LoadedModel
from prefill.store.app_settings import PER_MODEL_FIELDS, RELOAD_FIELDS, SECTIONS, ModelSettings, Settings
from prefill.ui.models.models_folder import folder_problem
from prefill.ui.settings_editors import RELOAD_NOTE, FieldEditor, fit_width, range_text, side_by_side
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.text_sheet import primary
from prefill.ui.widgets.tokens import SPACE

LAYOUT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Generation", ("sampling.temperature", "sampling.top_k", "sampling.top_p", "sampling.min_p",
                    "sampling.repeat_penalty", "sampling.repeat_last_n", "sampling.max_tokens", "sampling.seed",
                    "ui.max_tool_rounds")),
    ("Model", ("model.n_ctx", "model.n_gpu_layers", "model.flash_attn", "model.kv_type", "model.n_threads",
               "model.n_batch", "model.reasoning_budget", "model.overflow_policy", "model.kv_disk_budget_mb",
               "model.speculative", "model.draft_model_path", "model.draft_max")),
    ("Memory", ("memory.budget_mb", "memory.max_models", "memory.idle_minutes")),
    ("Downloads", ("ui.models_dir", "hub.hf_token")),
    ("Documents", ("documents.embedding_model",)),
    ("Appearance", ("ui.theme",)),
)
# Kept as they are: set by the window itself, or (stop texts) by the file and the CLI.
NOT_IN_DIALOG = frozenset({"model.last_model_path", "ui.window_geometry", "ui.splitter_states", "sampling.stop",
                           "ui.tools_off"})  # the Tools dialog's checkboxes edit it
PER_MODEL_KEYS = frozenset(f"model.{name}" for name in PER_MODEL_FIELDS)  # remembered per model
LOAD_KEYS = frozenset(f"model.{name}" for name in RELOAD_FIELDS)  # of those, the ones whose change reloads


class SettingsDialog(QDialog):
    """Edits one Settings value; `result_settings()` is the edited value (checked).

    Args:
        model: the model loaded now: a local one's load settings are edited as its own.

    Signals:
        clear_cache_requested(): the user asked to delete every saved KV cache.
    """

    clear_cache_requested = Signal()

    def __init__(self, settings: Settings, parent: QWidget | None = None, cache_usage: Usage | None = None,
                 model: LoadedModel | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.original = settings
        self.model_path = str(model.path) if model is not None and not model.remote else ""
        self.n_layer = model.n_layer if self.model_path and model is not None else 0
        self.editors: dict[str, FieldEditor] = {}
        self._building = True
        tabs = QTabWidget()
        for title, keys in LAYOUT:
            page = QWidget()
            form = QFormLayout(page)
            form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)  # each label beside its field
            form.setContentsMargins(SPACE.lg, SPACE.lg, SPACE.lg, SPACE.lg)
            form.setHorizontalSpacing(SPACE.lg)
            form.setVerticalSpacing(SPACE.sm)
            if title == "Model":
                self._model_scope(form, model)
            for key in keys:
                if key == "model.overflow_policy" and self.model_path:  # else the scope heading says so
                    form.addRow(_heading("For every model"))
                editor = self._editor(key)
                editor.place(form, plain_label("" if isinstance(editor.widget, QCheckBox) else editor.label))
            if title == "Model":  # what the saved chat caches hold now, and a way to drop them
                self.cache_use = plain_label()
                clear = QPushButton("Clear")
                clear.setObjectName("clear-cache")
                clear.clicked.connect(self.clear_cache_requested)
                form.addRow(plain_label("Saved chat caches"), side_by_side(self.cache_use, clear))
            tabs.addTab(page, title)
        self.tabs = tabs
        self.cache_budget = self.editors["model.kv_disk_budget_mb"].input
        speculative = self.editors["model.speculative"].input
        assert isinstance(speculative, QComboBox)
        speculative.currentIndexChanged.connect(lambda _i: self._on_speculative_changed(speculative.currentData()))
        self._on_speculative_changed(speculative.currentData())
        self._show_gpu_layers()
        self.set_cache_usage(cache_usage)
        self.problem = plain_label()
        self.problem.setObjectName("settings-problem")
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        primary(self.buttons.button(QDialogButtonBox.StandardButton.Ok))
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.lg, SPACE.lg, SPACE.lg, SPACE.lg)
        lay.setSpacing(SPACE.md)
        lay.setSizeConstraint(QVBoxLayout.SizeConstraint.SetMinimumSize)  # grows when a fault is explained
        lay.addWidget(tabs)
        lay.addWidget(self.problem)
        lay.addWidget(self.buttons)
        self._building = False

    def _model_scope(self, form: QFormLayout, model: LoadedModel | None) -> None:
        """Whose load settings the Model tab edits: the loaded model's own, or every model's."""
        self.use_for_all = QCheckBox("Use for all models")
        self.use_for_all.setObjectName("use-for-all")
        self.reset_button = QPushButton("Reset to defaults")
        self.reset_button.setObjectName("reset-model")
        if not self.model_path or model is None:
            self.scope = _heading("For every model")
            self.use_for_all.setChecked(True)
            self.use_for_all.hide()
            self.reset_button.hide()
        else:
            self.scope = _heading(f"For {model_display_name(model.path, model.name)}")
            self.scope.setToolTip(tooltip(f"Remembered for this model file:\n{model.path}"))
            self.use_for_all.setToolTip(tooltip("Make these the defaults for every model (this model's own "
                                                "settings are forgotten; other models keep theirs)."))
            self.reset_button.setToolTip(tooltip("Show the defaults again: this model loads as every other does."))
        self.scope.setObjectName("model-scope")
        self.use_for_all.toggled.connect(self._on_editor_changed)
        self.reset_button.clicked.connect(self._on_reset_clicked)
        form.addRow(self.scope)
        form.addRow(side_by_side(self.use_for_all, self.reset_button))

    def _editor(self, key: str) -> FieldEditor:
        section_name, _, name = key.partition(".")
        section = SECTIONS[section_name]
        item = {f.name: f for f in dataclasses.fields(section)}[name]  # type: ignore[arg-type]
        shown = self.original.model_for(self.model_path) if section_name == "model" else None
        value = getattr(shown if shown is not None else getattr(self.original, section_name), name)
        hint = hints(section)[name]
        meta = dict(item.metadata)
        notes = [range_text(meta, hint is int or name == "n_gpu_layers") if hint in (int, float) else ""]
        if key in LOAD_KEYS:
            notes.append(RELOAD_NOTE)
        editor = FieldEditor(key, hint, meta, value, self._on_editor_changed, " · ".join(n for n in notes if n))
        self.editors[key] = editor
        return editor

    def _show_gpu_layers(self) -> None:
        """GPU layers as "N of M layers", M from the loaded model."""
        gpu = self.editors["model.n_gpu_layers"]
        if self.n_layer and gpu.spin is not None:
            gpu.spin.setSuffix(f" of {self.n_layer} layers")  # the model's count shows in the box
            fit_width(gpu.spin, gpu.widest())
            gpu.side.setText(RELOAD_NOTE)
            gpu.side.setToolTip(tooltip(f"The model has {self.n_layer} layers."))

    def result_settings(self) -> Settings:
        """The edited settings: a loaded model's own load settings and thinking budget, or (Use for
        all models, or no model loaded) the defaults.

        Raises:
            InvalidSetting: The edits break a rule or a range (OK is disabled meanwhile).
        """
        values = {key: e.value() for key, e in self.editors.items()}
        if not self.model_path or self.use_for_all.isChecked():
            new = self.original.with_values(values)
            return new.with_model_overrides(self.model_path, {}) if self.model_path else new
        own = {key.partition(".")[2]: values.pop(key) for key in PER_MODEL_KEYS}
        new = self.original.with_values(values)
        return new.with_model_overrides(self.model_path, own)

    def check(self, create_folders: bool = False) -> str:
        """Why the edited settings cannot be used, in words ("" when they can); the field at fault says it too.
        `create_folders`: the Models folder is made now and written in (OK), else only looked at."""
        for each in self.editors.values():
            each.show_fault("")
        try:
            self.result_settings()
        except InvalidSetting as e:
            editor = self.editors.get(e.key)
            if editor is not None:
                editor.show_fault(f"{e.reason[:1].upper()}{e.reason[1:]}.")
            return f"{editor.label if editor else e.key}: {e.reason}."
        folder = self.editors["ui.models_dir"]
        problem = folder_problem(str(folder.value()), create_folders)
        if problem:
            folder.show_fault(problem)
            return f"{folder.label}: {problem[:1].lower()}{problem[1:]}"
        return ""

    def accept(self) -> None:
        problem = self.check(create_folders=True)
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        if not problem:
            super().accept()

    def set_cache_usage(self, usage: Usage | None) -> None:
        self.cache_use.setText("" if usage is None else f"{usage.bytes / 1024**3:.2f} GB in {usage.files} files")

    def _on_reset_clicked(self) -> None:
        for name in PER_MODEL_FIELDS:
            self.editors[f"model.{name}"].set_value(getattr(self.original.model, name))
        self._on_editor_changed()

    def _on_speculative_changed(self, mode: str) -> None:
        # What does not apply to the mode chosen is greyed out (and kept as it is).
        self.editors["model.draft_model_path"].widget.setEnabled(mode == "draft")
        self.editors["model.draft_max"].widget.setEnabled(mode != "off")

    def _on_editor_changed(self, *_args: object) -> None:
        if self._building:
            return
        problem = self.check()
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problem)


def _heading(text: str) -> QLabel:
    label = plain_label(text)
    label.setObjectName("heading")  # a section heading (ui/widgets/styles/dialogs.py)
    return label


def needs_reload(old: ModelSettings, new: ModelSettings) -> bool:
    """Whether a change of model settings takes a reload of the model: any load setting. (Speculative
    decoding is set on the loaded engine: its mode and draft length at once, a draft model loaded beside it.)"""
    return old.load_settings() != new.load_settings()
