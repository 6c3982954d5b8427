"""The thinking budget in the window: a control beside the Think switch, kept per chat, a default per
model in the settings, and the sidebar's thinking tokens against the budget."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from prefill.engine.events import MetricsSnapshot
from prefill.engine.prompt.thinking_budget import NOTE
from prefill.engine.request import TemplateOptions
from prefill.store import HistoryStore
from prefill.ui.chat.chat_choices import stored_options
from tests.engine.budget_thinkers import BudgetThinker, write_budget_thinker
from tests.ui.conftest import load, send, small_settings


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> BudgetThinker:
    return write_budget_thinker(tmp_path_factory.mktemp("budget") / "qwen.gguf", "qwen")


@pytest.fixture(scope="module")
def command_r(tmp_path_factory: pytest.TempPathFactory) -> BudgetThinker:
    return write_budget_thinker(tmp_path_factory.mktemp("budget") / "command-r.gguf", "command-r")


def set_budget(w, value: int) -> None:
    """Type a budget into the control, as a person would (-1: the model's default)."""
    spin = w.reasoning_controls.budget
    if value == spin.minimum():
        while spin.value() > value:  # arrowed down to its lowest value, shown in words
            qtbot_key(spin, Qt.Key.Key_Down)
        assert spin.text() == spin.specialValueText()
    else:
        spin.selectAll()
        QTest.keyClicks(spin, str(value))
        QTest.keyClick(spin, Qt.Key.Key_Return)
    assert spin.value() == value


def qtbot_key(widget, key: Qt.Key) -> None:
    QTest.keyClick(widget, key)


def cut_at(thinker: BudgetThinker, budget: int, reasoning_tokens: int) -> bool:
    """Whether `reasoning_tokens` is `budget` thoughts and the close (its last blank may count as the answer's)."""
    return budget + len(thinker.close) - 1 <= reasoning_tokens <= budget + len(thinker.close)


def stored_answer(app, cid: int):
    return HistoryStore(app.data / "history.sqlite3").messages(cid)[-1]


def test_a_budget_set_in_the_window_cuts_the_thinking_and_the_sidebar_shows_it(app, qtbot, qwen) -> None:
    w = app.open(small_settings())
    load(qtbot, w, qwen.path)
    budget = w.reasoning_controls.budget
    assert budget.isVisibleTo(w.reasoning_controls) and budget.objectName() == "reasoning-budget"
    assert budget.value() == budget.minimum() and budget.specialValueText()  # the model's default, in words
    assert budget.suffix() == " tokens" and budget.toolTip() and budget.accessibleName() == "Thinking budget"
    set_budget(w, 5)
    assert w.controller.options.reasoning_budget == 5
    live: list[str] = []
    w.engine.worker.metrics.connect(lambda _r, _m: live.append(w.sidebar.text("tokens")))  # after the sidebar's
    f = send(qtbot, w, "What is 2+2?")
    assert f.reasoning.endswith(NOTE) and qwen.family.thinking not in f.reasoning
    assert f.text == qwen.family.answer and cut_at(qwen, 5, f.metrics.reasoning_tokens)
    tokens = w.sidebar.text("tokens")
    assert f"{f.metrics.reasoning_tokens} of 5 thinking" in tokens, tokens
    assert all(" of 5 thinking" in t for t in live if "thinking" in t)
    cid = w.controller.conversation_id
    app.close(w)
    stored = stored_answer(app, cid)
    assert stored.reasoning.endswith(NOTE) and cut_at(qwen, 5, stored.figures["reasoning_tokens"])
    assert stored.figures["reasoning_budget"] == 5


def test_the_sidebar_counts_thinking_against_the_budget_live(app, qtbot, qwen) -> None:
    w = app.open(small_settings())
    load(qtbot, w, qwen.path)
    set_budget(w, 512)
    w.sidebar.set_budget(512)
    w.sidebar.begin_answer()
    w.sidebar.on_metrics(MetricsSnapshot(completion_tokens=130, reasoning_tokens=120))
    assert "120 of 512 thinking · 10 answer" in w.sidebar.text("tokens")
    w.sidebar.set_budget(None)
    w.sidebar.on_metrics(MetricsSnapshot(completion_tokens=130, reasoning_tokens=120))
    assert "(120 thinking · 10 answer)" in w.sidebar.text("tokens")


def test_the_budget_is_kept_per_chat_and_after_a_restart(app, qtbot, qwen) -> None:
    w = app.open(small_settings())
    load(qtbot, w, qwen.path)
    set_budget(w, 4)
    f = send(qtbot, w, "2+2?")
    assert cut_at(qwen, 4, f.metrics.reasoning_tokens)
    first = w.controller.conversation_id
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.new_conversation()
    set_budget(w, -1)  # this chat: the model's default (no limit)
    assert w.controller.options.reasoning_budget is None
    f = send(qtbot, w, "2+2?")
    assert qwen.family.thinking in f.reasoning  # uncut (the script's own close says it is time to answer too)
    assert "of" not in w.sidebar.text("tokens").partition("thinking")[0]  # no budget in force
    second = w.controller.conversation_id
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(first)
    assert w.controller.options.reasoning_budget == 4 and w.reasoning_controls.budget.value() == 4
    assert " of 4 thinking" in w.sidebar.text("tokens")  # its last answer's, from its stored figures
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(second)
    assert w.controller.options.reasoning_budget is None
    assert w.reasoning_controls.budget.value() == w.reasoning_controls.budget.minimum()
    app.close(w)
    w2 = app.open(small_settings())
    load(qtbot, w2, qwen.path)
    with qtbot.waitSignal(w2.controller.conversation_opened, timeout=10_000):
        w2.controller.open_conversation(first)
    assert w2.reasoning_controls.budget.value() == 4
    f = send(qtbot, w2, "And 3+3?")
    assert f.reasoning.endswith(NOTE) and cut_at(qwen, 4, f.metrics.reasoning_tokens)


def test_the_models_default_budget_applies_where_the_chat_has_none(app, qtbot, qwen) -> None:
    s = small_settings().with_model_overrides(str(qwen.path), {"reasoning_budget": 3})
    w = app.open(s)
    load(qtbot, w, qwen.path)
    assert w.controller.options.reasoning_budget is None
    f = send(qtbot, w, "2+2?")
    assert f.reasoning.endswith(NOTE) and cut_at(qwen, 3, f.metrics.reasoning_tokens)
    assert " of 3 thinking" in w.sidebar.text("tokens")
    cid = w.controller.conversation_id
    set_budget(w, 6)  # the chat's own wins over the model's
    f = send(qtbot, w, "And 3+3?")
    assert cut_at(qwen, 6, f.metrics.reasoning_tokens)
    app.close(w)
    settings = HistoryStore(app.data / "history.sqlite3").conversation(cid).settings
    assert settings["template"]["reasoning_budget"] == 6


def test_a_budget_of_zero_means_no_thinking(app, qtbot, qwen) -> None:
    w = app.open(small_settings())
    load(qtbot, w, qwen.path)
    set_budget(w, 0)
    f = send(qtbot, w, "2+2?")
    assert (f.reasoning, f.metrics.reasoning_tokens, f.text) == ("", 0, qwen.family.answer)
    assert "no thinking" in w.sidebar.text("tokens")


def test_the_control_is_shown_for_a_model_that_reasons_without_a_switch(app, qtbot, command_r) -> None:
    w = app.open(small_settings())
    load(qtbot, w, command_r.path)
    controls = w.reasoning_controls
    assert w.reasoning_action.isVisible() and controls.budget.isVisibleTo(controls)
    assert not controls.think.isVisibleTo(controls)  # its template has no thinking switch
    set_budget(w, 3)
    f = send(qtbot, w, "2+2?")
    assert f.reasoning.endswith(NOTE) and f.text == command_r.family.answer


def test_a_stored_budget_is_read_back_leniently() -> None:
    def read(budget: object) -> TemplateOptions:
        return stored_options({"template": {"think": True, "reasoning_budget": budget}})

    assert read(256) == TemplateOptions(think=True, reasoning_budget=256) and read(0).reasoning_budget == 0
    for bad in (-1, -3, "512", 2.5, True, None, 10**9, [4]):  # not a number of tokens: the model's default
        assert read(bad) == TemplateOptions(think=True)
    assert stored_options({"template": {"reasoning_effort": "extreme", "reasoning_budget": 7}}).reasoning_budget == 7
