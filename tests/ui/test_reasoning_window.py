"""The window with models people download: thinking shown apart, a failed turn that stays
sendable, the chat format said where the user sees it, the Think switch kept per chat."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.bench.tiny_model import write_tiny_llama
from prefill.engine.request import TemplateOptions
from prefill.store import HistoryStore
from prefill.ui.chat.transcript.transcript_model import Roles
from tests.engine.vocab_models import Vocab, vocab_dir, write_scripted, write_thinker
from tests.ui.conftest import ANSWER_TIMEOUT, load, send, small_settings

# Refuses a question with "forbidden" in it, and roles that do not alternate, as published templates do.
PICKY_TEMPLATE = (
    "{%- for m in messages %}"
    "{%- if m.role == 'user' and 'forbidden' in m.content %}{{ raise_exception('no forbidden words') }}{% endif -%}"
    "{%- if m.role != 'system' and (m.role == 'user') == (loop.previtem is defined and loop.previtem.role == 'user') %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant') }}{% endif -%}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor -%}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}"
)


@pytest.fixture(scope="module")
def thinker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_thinker(tmp_path_factory.mktemp("thinker") / "thinker.gguf")


@pytest.fixture(scope="module")
def base_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vocabs = vocab_dir()
    v = Vocab(vocabs / "ggml-vocab-llama-spm.gguf")
    try:
        chain = [v.tokenize("Assistant:", add_bos=True)[-1], *v.tokenize("Paris.\nUser:")]
    finally:
        v.close()
    out = tmp_path_factory.mktemp("base") / "base.gguf"
    return write_scripted(out, vocabs / "ggml-vocab-llama-spm.gguf", chain, keep_template=False)


def last_widget(qtbot, w):
    """The newest row's widget, once the lazy view has rendered it."""
    row = w.transcript.rowCount() - 1
    qtbot.waitUntil(lambda: w.chat_view.live_widget(row) is not None, timeout=10_000)
    return w.chat_view.live_widget(row)


def test_thinking_streams_open_then_folds_and_is_kept(app, qtbot, thinker: Path) -> None:
    w = app.open(small_settings())
    load(qtbot, w, thinker)
    controls = w.reasoning_controls
    assert w.reasoning_action.isVisible() and controls.think.isVisibleTo(controls)
    assert not controls.effort.isVisibleTo(controls)  # no reasoning_effort in this template
    seen: list[tuple[bool, str]] = []

    def probe(top, _bottom, roles) -> None:
        if Roles.REASONING in roles:
            live = w.chat_view.live_widget(top.row())
            if live is not None:
                seen.append((live.thinking.is_open(), live.thinking.text()))

    w.transcript.dataChanged.connect(probe)
    f = send(qtbot, w, "What is 2+2?")
    assert (f.reasoning, f.text) == ("Two and two make four.", "The answer: 4!")
    assert seen and seen[0][0], "the thinking is open while it streams"
    answer = last_widget(qtbot, w)
    assert answer.thinking.text() == "Two and two make four." and not answer.thinking.is_open()
    assert "Thought for" in answer.thinking.toggle.text() and "tokens" in answer.thinking.toggle.text()
    assert answer.text() == "The answer: 4!"
    assert "thinking" in w.sidebar.text("tokens") and w.sidebar.text("ttfa").endswith("ms")
    cid = w.controller.conversation_id
    app.close(w)
    stored = HistoryStore(app.data / "history.sqlite3").messages(cid)[-1]
    assert (stored.content, stored.reasoning) == ("The answer: 4!", "Two and two make four.")
    assert stored.figures["reasoning_tokens"] > 0
    # Reopened from history: the thinking is there, folded.
    w2 = app.open(small_settings())
    with qtbot.waitSignal(w2.controller.conversation_opened, timeout=10_000):
        w2.controller.open_conversation(cid)
    again = last_widget(qtbot, w2)
    assert again.thinking.text() == "Two and two make four." and not again.thinking.is_open()


def test_think_switch_is_kept_with_the_conversation(app, qtbot, thinker: Path) -> None:
    w = app.open(small_settings())
    load(qtbot, w, thinker)
    w.reasoning_controls.set_options(TemplateOptions(think=False))
    w.reasoning_controls.changed.emit(w.reasoning_controls.options())
    assert w.controller.options == TemplateOptions(think=False)
    send(qtbot, w, "2+2?")
    cid = w.controller.conversation_id
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.new_conversation()
    w.controller.choices.set_options(TemplateOptions())
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(cid)
    assert w.controller.options == TemplateOptions(think=False)
    assert w.reasoning_controls.think.currentText() == "off"


def test_failed_turn_keeps_the_question_and_the_chat_sendable(app, qtbot, tmp_path: Path) -> None:
    model = write_tiny_llama(tmp_path / "picky.gguf", chat_template=PICKY_TEMPLATE)
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, model)
    with qtbot.waitSignal(w.controller.busy_changed, timeout=ANSWER_TIMEOUT, check_params_cb=lambda b: not b):
        w.controller.send("a forbidden question")
    assert "no forbidden words" in w.notice.text() and "retry" in w.notice.text().lower()
    rows = w.transcript.rows()
    assert [r.role for r in rows] == ["user"] and rows[0].content == "a forbidden question"
    assert last_widget(qtbot, w).buttons["retry"].isVisibleTo(w)
    # Editing it answers it; before, the lone question made every later send user, user.
    with qtbot.waitSignal(w.controller.answer_finished, timeout=ANSWER_TIMEOUT):
        w.controller.edits.edit(0, "a fine question")
    assert [r.role for r in w.transcript.rows()] == ["user", "assistant"]
    assert not w.chat_view.live_widget(0).buttons["retry"].isVisibleTo(w)


def test_a_new_message_after_a_failure_is_sent_with_the_one_before(app, qtbot, tmp_path: Path) -> None:
    template = PICKY_TEMPLATE.replace("'forbidden' in m.content", "m.content == 'forbidden'")
    model = write_tiny_llama(tmp_path / "picky2.gguf", chat_template=template)
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, model)
    with qtbot.waitSignal(w.controller.busy_changed, timeout=ANSWER_TIMEOUT, check_params_cb=lambda b: not b):
        w.controller.send("forbidden")
    f = send(qtbot, w, "then this instead")  # user, user: merged, so alternation holds
    assert f.reason in ("stop", "length")
    assert [r.role for r in w.transcript.rows()] == ["user", "user", "assistant"]


def test_retry_sends_the_same_question_again(app, qtbot, tmp_path: Path) -> None:
    model = write_tiny_llama(tmp_path / "picky3.gguf", chat_template=PICKY_TEMPLATE)
    w = app.open(small_settings(max_tokens=4))
    load(qtbot, w, model)
    with qtbot.waitSignal(w.controller.busy_changed, timeout=ANSWER_TIMEOUT, check_params_cb=lambda b: not b):
        w.controller.send("forbidden again")
    w.show_notice("")
    with qtbot.waitSignal(w.controller.busy_changed, timeout=ANSWER_TIMEOUT, check_params_cb=lambda b: not b):
        last_widget(qtbot, w).buttons["retry"].click()
    assert "no forbidden words" in w.notice.text()  # asked again, refused again, still kept
    assert [r.content for r in w.transcript.rows()] == ["forbidden again"]


def test_base_model_is_labelled_in_the_sidebar_and_once_in_the_chat(app, qtbot, base_model: Path) -> None:
    w = app.open(small_settings())
    load(qtbot, w, base_model)
    assert "base model" in w.sidebar.text("format")
    notices = [r.content for r in w.transcript.rows() if r.role == "notice"]
    assert len(notices) == 1 and "base model" in notices[0]
    f = send(qtbot, w, "Capital of France?")
    assert f.text == "Paris."
    assert not w.reasoning_action.isVisible()
