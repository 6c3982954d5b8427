"""Generation, model and appearance settings, edited as one typed Settings value."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.kv_disk import Usage
from prefill.engine.settings import LoadSettings, OverflowSettings
from prefill.engine.settings import SamplingSettings as EngineSampling
from prefill.store.settings import ModelSettings, SamplingSettings, Settings

GPU_CHOICES = ("auto", "all", "none", "count")


def _spin(lo: int, hi: int, value: int) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setValue(value)
    return s


def _dspin(lo: float, hi: float, step: float, value: float) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setSingleStep(step)
    s.setDecimals(2)
    s.setValue(value)
    return s


class SettingsDialog(QDialog):
    """Signals:
        clear_cache_requested(): the user asked to delete every saved KV cache.
    """

    clear_cache_requested = Signal()

    def __init__(self, settings: Settings, parent: QWidget | None = None, cache_usage: Usage | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.original = settings
        s, m = settings.sampling, settings.model
        tabs = QTabWidget()

        gen = QWidget()
        gf = QFormLayout(gen)
        self.temperature = _dspin(0, 5, 0.05, s.temperature)
        self.top_p = _dspin(0.01, 1, 0.01, s.top_p)
        self.top_k = _spin(0, 1000, s.top_k)
        self.min_p = _dspin(0, 1, 0.01, s.min_p)
        self.repeat_penalty = _dspin(0.5, 3, 0.05, s.repeat_penalty)
        self.max_tokens = _spin(1, 1_000_000, s.max_tokens)
        self.seed = _spin(-1, 2**31 - 1, s.seed)
        for title, w in (("Temperature", self.temperature), ("Top-p", self.top_p), ("Top-k", self.top_k),
                         ("Min-p", self.min_p), ("Repeat penalty", self.repeat_penalty),
                         ("Max tokens", self.max_tokens), ("Seed (-1: random)", self.seed)):
            gf.addRow(title, w)
        tabs.addTab(gen, "Generation")

        model = QWidget()
        mf = QFormLayout(model)
        self.n_ctx = _spin(128, 1_048_576, m.n_ctx)
        self.gpu_mode = QComboBox()
        self.gpu_mode.addItems(GPU_CHOICES)
        self.gpu_count = _spin(0, 1000, m.n_gpu_layers if isinstance(m.n_gpu_layers, int) else 0)
        self.gpu_mode.setCurrentText(m.n_gpu_layers if isinstance(m.n_gpu_layers, str) else "count")
        self.flash_attn = QCheckBox("Flash attention")
        self.flash_attn.setChecked(m.flash_attn)
        self.kv_type = QComboBox()
        self.kv_type.addItems(["f16", "q8_0", "q4_0"])
        self.kv_type.setCurrentText(m.kv_type)
        self.threads = _spin(0, 512, m.n_threads)
        self.batch = _spin(1, 65536, m.n_batch)
        self.overflow = QComboBox()
        self.overflow.addItems(["rolling_window", "truncate_middle", "stop"])
        self.overflow.setCurrentText(m.overflow_policy)
        for title, w in (("Context length", self.n_ctx), ("GPU layers", self.gpu_mode), ("Layer count", self.gpu_count),
                         ("", self.flash_attn), ("KV cache type", self.kv_type), ("CPU threads (0: auto)", self.threads),
                         ("Batch size", self.batch), ("When the chat is too long", self.overflow)):
            mf.addRow(title, w)
        self.cache_budget = _spin(0, 1_048_576, m.kv_disk_budget_mb)
        self.cache_budget.setSuffix(" MiB")
        self.cache_use = QLabel("")
        self.cache_use.setTextFormat(Qt.TextFormat.PlainText)
        self.set_cache_usage(cache_usage)
        clear = QPushButton("Clear")
        clear.setObjectName("clear-cache")
        clear.clicked.connect(self.clear_cache_requested)
        cache_row = QHBoxLayout()
        for w in (self.cache_budget, self.cache_use):
            cache_row.addWidget(w)
        cache_row.addWidget(clear)
        mf.addRow("Saved chat caches (0: off)", cache_row)
        tabs.addTab(model, "Model")

        hub = QWidget()
        hf = QFormLayout(hub)
        self.models_dir = QLineEdit(settings.ui.models_dir)
        self.models_dir.setPlaceholderText("default: the Prefill data folder")
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._on_browse_clicked)
        row = QHBoxLayout()
        row.addWidget(self.models_dir, 1)
        row.addWidget(browse)
        hf.addRow("Models folder", row)
        self.hf_token = QLineEdit(settings.hub.hf_token)
        self.hf_token.setEchoMode(QLineEdit.EchoMode.Password)
        self.hf_token.setPlaceholderText("for gated repositories (or set HF_TOKEN)")
        hf.addRow("Hugging Face token", self.hf_token)
        tabs.addTab(hub, "Downloads")

        look = QWidget()
        lf = QFormLayout(look)
        self.theme = QComboBox()
        self.theme.addItems(["system", "light", "dark"])
        self.theme.setCurrentText(settings.ui.theme)
        lf.addRow("Theme", self.theme)
        tabs.addTab(look, "Appearance")

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(tabs)
        lay.addWidget(buttons)

    def result_settings(self) -> Settings:
        gpu = self.gpu_mode.currentText()
        model = replace(
            self.original.model,
            n_ctx=self.n_ctx.value(),
            n_gpu_layers=self.gpu_count.value() if gpu == "count" else gpu,
            flash_attn=self.flash_attn.isChecked(),
            kv_type=self.kv_type.currentText(),
            n_threads=self.threads.value(),
            n_batch=self.batch.value(),
            overflow_policy=self.overflow.currentText(),
            kv_disk_budget_mb=self.cache_budget.value(),
        )
        sampling = replace(
            self.original.sampling,
            temperature=self.temperature.value(), top_p=self.top_p.value(), top_k=self.top_k.value(),
            min_p=self.min_p.value(), repeat_penalty=self.repeat_penalty.value(),
            max_tokens=self.max_tokens.value(), seed=self.seed.value(),
        )
        ui = replace(self.original.ui, theme=self.theme.currentText(), models_dir=self.models_dir.text().strip())
        hub = replace(self.original.hub, hf_token=self.hf_token.text().strip())
        return replace(self.original, model=model, sampling=sampling, ui=ui, hub=hub)

    def set_cache_usage(self, usage: Usage | None) -> None:
        self.cache_use.setText("" if usage is None else f"{usage.bytes / 1024**3:.2f} GB in {usage.files} files")

    def _on_browse_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Models folder", self.models_dir.text())
        if folder:
            self.models_dir.setText(folder)


def needs_reload(old: ModelSettings, new: ModelSettings) -> bool:
    """Whether a change of model settings takes a reload of the model."""
    keys = ("n_ctx", "n_gpu_layers", "flash_attn", "kv_type", "n_threads", "n_batch")
    return any(getattr(old, k) != getattr(new, k) for k in keys)


def load_settings(m: ModelSettings) -> LoadSettings:
    return LoadSettings(n_ctx=m.n_ctx, n_gpu_layers=m.n_gpu_layers, flash_attn=m.flash_attn,
                        kv_type=m.kv_type, n_threads=m.n_threads, n_batch=m.n_batch)


def engine_sampling(s: SamplingSettings) -> EngineSampling:
    return EngineSampling(temperature=s.temperature, top_k=s.top_k, top_p=s.top_p, min_p=s.min_p,
                          repeat_penalty=s.repeat_penalty, seed=s.seed, max_tokens=s.max_tokens)


def overflow_settings(m: ModelSettings) -> OverflowSettings:
    return OverflowSettings(policy=m.overflow_policy)
