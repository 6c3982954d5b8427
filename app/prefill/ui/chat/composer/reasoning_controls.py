"""The thinking switch, gpt-oss's reasoning effort and the thinking budget, for the open conversation.

The switches are shown only for a model whose template takes them: `enable_thinking` (Qwen3, SmolLM3,
Granite…) and `reasoning_effort` (gpt-oss). "Default" leaves the choice to the template. The budget
(the most tokens the model thinks before it answers) is shown for every model that thinks apart;
its lowest value, "model's default", leaves it to the model's setting (Settings, remembered per model).
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QHBoxLayout, QSpinBox, QWidget

from prefill.engine.request import MAX_REASONING_BUDGET, REASONING_EFFORTS, TemplateOptions
from prefill.session.loaded import LoadedModel
from prefill.ui.widgets.plain_text import plain_label

THINK_CHOICES: tuple[tuple[str, bool | None], ...] = (("default", None), ("on", True), ("off", False))
MODEL_DEFAULT = -1  # the budget control's value for "no budget of this chat's own": the model's default
BUDGET_TIP = ("The most tokens the model may think before it answers, in this chat. When they are spent, "
              "the model is told it is time to answer.\n"
              "Model's default: the budget set for this model in Settings (none unless you set one).\n"
              "0: no thinking at all.")


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
        self.budget = QSpinBox()
        self.budget.setObjectName("reasoning-budget")
        self.budget.setRange(MODEL_DEFAULT, MAX_REASONING_BUDGET)
        self.budget.setValue(MODEL_DEFAULT)  # not 0, a spin box's first value: that is no thinking
        self.budget.setSpecialValueText("model's default")  # shown for the lowest value
        self.budget.setSuffix(" tokens")
        self.budget.setStepType(QAbstractSpinBox.StepType.AdaptiveDecimalStepType)  # 10s, then 100s…
        self.budget.setToolTip(BUDGET_TIP)
        for control, name in ((self.think, "Thinking"), (self.effort, "Reasoning effort"),
                              (self.budget, "Thinking budget")):
            control.setAccessibleName(name)
        self.think_label = plain_label(" Think: ")
        self.effort_label = plain_label(" Effort: ")
        self.budget_label = plain_label(" Budget: ")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        for w in (self.think_label, self.think, self.effort_label, self.effort, self.budget_label, self.budget):
            lay.addWidget(w)
        self.think.activated.connect(self._on_combo_activated)
        self.effort.activated.connect(self._on_combo_activated)
        self.budget.valueChanged.connect(self._on_budget_value_changed)

    def options(self) -> TemplateOptions:
        effort = self.effort.currentText()
        budget = self.budget.value()
        return TemplateOptions(THINK_CHOICES[self.think.currentIndex()][1], "" if effort == "default" else effort,
                               None if budget == MODEL_DEFAULT else budget)

    def set_options(self, options: TemplateOptions) -> None:
        self.think.setCurrentIndex(next(i for i, (_l, v) in enumerate(THINK_CHOICES) if v is options.think))
        self.effort.setCurrentText(options.reasoning_effort or "default")
        budget = MODEL_DEFAULT if options.reasoning_budget is None else options.reasoning_budget
        if budget != self.budget.value():  # else left alone: the person may be typing it
            with QSignalBlocker(self.budget):
                self.budget.setValue(budget)

    def set_model(self, m: LoadedModel | None) -> bool:
        """Show the switches this model's template takes, and the budget if it thinks; whether any is shown."""
        think = m is not None and m.takes_thinking_switch
        effort = m is not None and m.takes_reasoning_effort
        reasons = m is not None and m.reasons
        shown: tuple[tuple[tuple[QWidget, ...], bool], ...] = (
            ((self.think_label, self.think), think), ((self.effort_label, self.effort), effort),
            ((self.budget_label, self.budget), reasons))
        for widgets, visible in shown:
            for w in widgets:
                w.setVisible(visible)
        return think or effort or reasons

    def _on_combo_activated(self, _index: int) -> None:
        self.changed.emit(self.options())

    def _on_budget_value_changed(self, _value: int) -> None:
        self.changed.emit(self.options())
