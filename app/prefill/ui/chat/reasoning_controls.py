"""The thinking switch and gpt-oss's reasoning effort, for the open conversation.

Shown only for a model whose template takes them: `enable_thinking` (Qwen3, SmolLM3,
Granite…) and `reasoning_effort` (gpt-oss). "Default" leaves the choice to the template.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QWidget

from prefill.engine.request import REASONING_EFFORTS, TemplateOptions
from prefill.session.loaded import LoadedModel
from prefill.ui.shared.plain_text import plain_label

THINK_CHOICES: tuple[tuple[str, bool | None], ...] = (("default", None), ("on", True), ("off", False))


class ReasoningControls(QWidget):
    """Signals:
        changed(object): the TemplateOptions the user picked.
    """

    changed = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.think = QComboBox()
        self.think.setObjectName("think-switch")
        for label, _value in THINK_CHOICES:
            self.think.addItem(label)
        self.think.setToolTip("Whether a reasoning model thinks before it answers, in this chat")
        self.effort = QComboBox()
        self.effort.setObjectName("reasoning-effort")
        self.effort.addItems(["default", *REASONING_EFFORTS])
        self.effort.setToolTip("How long gpt-oss reasons, in this chat")
        self.think_label = plain_label(" Think: ")
        self.effort_label = plain_label(" Effort: ")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        for w in (self.think_label, self.think, self.effort_label, self.effort):
            lay.addWidget(w)
        self.think.activated.connect(self._on_combo_activated)
        self.effort.activated.connect(self._on_combo_activated)

    def options(self) -> TemplateOptions:
        effort = self.effort.currentText()
        return TemplateOptions(THINK_CHOICES[self.think.currentIndex()][1], "" if effort == "default" else effort)

    def set_options(self, options: TemplateOptions) -> None:
        self.think.setCurrentIndex(next(i for i, (_l, v) in enumerate(THINK_CHOICES) if v is options.think))
        self.effort.setCurrentText(options.reasoning_effort or "default")

    def set_model(self, m: LoadedModel | None) -> bool:
        """Show the switches this model's template takes; whether it takes any."""
        think = m is not None and m.takes_thinking_switch
        effort = m is not None and m.takes_reasoning_effort
        for w in (self.think_label, self.think):
            w.setVisible(think)
        for w in (self.effort_label, self.effort):
            w.setVisible(effort)
        return think or effort

    def _on_combo_activated(self, _index: int) -> None:
        self.changed.emit(self.options())
