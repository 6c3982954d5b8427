"""Compaction in the window, on SmolLM2 with a 512-token context and the "summarise" policy: a chat that
goes past the threshold is compacted right after the answer (a summary row of its own, folded), the next
turn reads the summary instead of the turns, the summary can be edited and removed (Undo), it survives a
restart and an export/import, and the Compact action does it on demand (Stop stops it) or says why it
cannot."""

from __future__ import annotations

from pathlib import Path

from prefill.session.compaction import HEADING, Summary, threshold
from prefill.ui.chat.transcript.summary_rows import REMOVED, SUMMARY, WORKING
from prefill.ui.chat.transcript.summary_widget import FOLDED_TITLE, SummaryWidget
from tests.compaction_chat import QUESTIONS as ALL_QUESTIONS

from .conftest import ANSWER_TIMEOUT, App, load, send, small_settings

N_CTX = 512
QUESTIONS = ALL_QUESTIONS[:6]


def settings(policy: str = "summarise"):
    return small_settings(n_ctx=N_CTX, policy=policy, max_tokens=96)


def reopen(app: App, qtbot, cid: int):
    """A restarted window with chat `cid` open, every row read."""
    w = app.open(settings())
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=5000):
        w.controller.open_conversation(cid)
    qtbot.waitUntil(lambda: w.controller.complete)
    return w


def summary_rows(w) -> list[int]:
    return [i for i, r in enumerate(w.transcript.rows()) if r.role == SUMMARY]


def chat_until_compacted(qtbot, w) -> tuple[Summary, list]:
    """Send QUESTIONS until an answer leaves the chat past the threshold and the window compacts it;
    the Summary, and the answers' Finished events."""
    made: list[Summary] = []
    w.controller.compaction.compacted.connect(made.append)
    finishes = []
    for q in QUESTIONS:
        f = send(qtbot, w, q)
        finishes.append(f)
        used = f.metrics.prompt_tokens + f.metrics.completion_tokens
        if used >= threshold(N_CTX):
            # Compacted right after the answer, before the next turn: busy, with a row that says so.
            assert w.controller.busy
            last = w.transcript.row(w.transcript.rowCount() - 1)
            assert last.role == SUMMARY and last.streaming
            qtbot.waitUntil(lambda: w.chat_view.live_widget(w.transcript.rowCount() - 1) is not None)
            assert w.chat_view.live_widget(w.transcript.rowCount() - 1).note.text() == WORKING
            qtbot.waitUntil(lambda: not w.controller.busy, timeout=ANSWER_TIMEOUT)
            break
        assert not w.controller.busy and not made
    assert len(made) == 1, "the chat never went past the threshold"
    return made[0], finishes


def test_a_chat_past_the_threshold_is_compacted_into_a_summary_row(app, qtbot, smollm2: Path) -> None:
    w = app.open(settings())
    load(qtbot, w, smollm2)
    summary, finishes = chat_until_compacted(qtbot, w)
    c = w.controller
    rows = w.transcript.rows()
    (at,) = summary_rows(w)
    assert at == len(rows) - 1  # at the end of the chat, when made
    assert rows[at].content == summary.text and summary.text.strip()
    assert summary.turns == len(finishes) >= 2 and summary.tokens_after < summary.tokens_before
    assert w.notice.text() == f"{summary.note}." and "earlier turns summarised" in summary.note
    # The turns stay, shown (folded) ...
    assert [r.content for r in rows if r.role == "user"] == QUESTIONS[: len(finishes)]
    # ... but the model reads the summary under the system prompt instead of them.
    sent = c.messages()
    assert sent[0].role == "system" and HEADING in sent[0].content and summary.text in sent[0].content
    assert len(sent) == 1
    widget = w.chat_view.live_widget(at)
    assert isinstance(widget, SummaryWidget) and not widget.is_open() and not widget.summary_text.isVisible()
    assert widget.note.text() == summary.note
    widget.toggle.click()
    assert widget.is_open() and widget.summary_text.isVisible() and widget.summary_text.text() == summary.text
    w.chat_view.scroll_to_row(0)
    qtbot.waitUntil(lambda: w.chat_view.live_widget(0) is not None)
    assert w.chat_view.live_widget(0).title.text() == "You" + FOLDED_TITLE

    # The next turn reads the summary: its prompt is shorter than the last one before it.
    after = send(qtbot, w, "What is my name, and what are my goats called?")
    assert after.metrics.prompt_tokens < finishes[-1].metrics.prompt_tokens
    assert [m.role for m in c.messages()] == ["system", "user", "assistant"]


def test_edit_and_remove_the_summary_change_what_the_model_reads(app, qtbot, smollm2: Path) -> None:
    w = app.open(settings())
    load(qtbot, w, smollm2)
    summary, finishes = chat_until_compacted(qtbot, w)
    c = w.controller
    (at,) = summary_rows(w)

    c.edits.edit(at, "The user is Ada; her goats are Pip, Bo and Moss.")
    assert w.transcript.row(at).content == "The user is Ada; her goats are Pip, Bo and Moss."
    assert "her goats are Pip, Bo and Moss." in c.messages()[0].content
    assert summary.text not in c.messages()[0].content
    assert "edited" in w.notice.text()

    # Remove: Undo is offered, and meanwhile the model reads the turns again.
    c.edits.delete(at)
    assert w.chat_view.toast.isVisible() and w.chat_view.toast.label.text() == REMOVED
    sent = c.messages()
    assert [m.content for m in sent if m.role == "user"] == QUESTIONS[: len(finishes)]
    assert not any(HEADING in m.content for m in sent)
    c.pending.undo()
    assert summary_rows(w) == [at] and "her goats are Pip, Bo and Moss." in c.messages()[0].content

    # The edit was kept: a restart reads it back.
    cid = c.conversation_id
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    app.close(w)
    w2 = reopen(app, qtbot, cid)
    (at2,) = summary_rows(w2)
    assert w2.transcript.row(at2).content == "The user is Ada; her goats are Pip, Bo and Moss."

    # Removed for good: gone from the history too.
    w2.controller.edits.delete(at2)
    w2.controller.pending.commit()
    qtbot.waitUntil(lambda: w2.store.pending() == 0)
    app.close(w2)
    w3 = reopen(app, qtbot, cid)
    assert summary_rows(w3) == []
    assert [m.content for m in w3.controller.messages() if m.role == "user"] == QUESTIONS[: len(finishes)]


def test_the_summary_survives_a_restart_and_an_export_import(app, qtbot, smollm2: Path, tmp_path: Path) -> None:
    w = app.open(settings())
    load(qtbot, w, smollm2)
    summary, finishes = chat_until_compacted(qtbot, w)
    cid = w.controller.conversation_id
    before = [(r.role, r.content) for r in w.transcript.rows()]
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    app.close(w)

    w2 = reopen(app, qtbot, cid)
    assert [(r.role, r.content) for r in w2.transcript.rows()] == before
    (at,) = summary_rows(w2)
    assert w2.transcript.row(at).figures == summary.as_dict()
    sent = w2.controller.messages()
    assert len(sent) == 1 and summary.text in sent[0].content  # it still folds the turns before it
    qtbot.waitUntil(lambda: w2.chat_view.live_widget(at) is not None)
    assert w2.chat_view.live_widget(at).note.text() == summary.note

    export = tmp_path / "chats.json"
    with qtbot.waitSignal(w2.history_menu.news, timeout=10_000):  # "Exported…"
        w2.history_menu.export_to(export, "json", [cid])
    other = App(qtbot, tmp_path / "elsewhere", smollm2)
    (tmp_path / "elsewhere").mkdir()
    try:
        w3 = other.open(settings())
        with qtbot.waitSignal(w3.history_menu.imported, timeout=10_000):
            w3.history_menu.import_from(export)
        got: list = []
        w3.store.list_conversations(then=got.append)
        qtbot.waitUntil(lambda: bool(got))
        assert len(got[0]) == 1
        with qtbot.waitSignal(w3.controller.conversation_opened, timeout=5000):
            w3.controller.open_conversation(got[0][0].id)
        qtbot.waitUntil(lambda: w3.controller.complete)
        assert [(r.role, r.content) for r in w3.transcript.rows()] == before
        assert w3.transcript.row(at).figures == summary.as_dict()
        assert [m.content for m in w3.controller.messages()] == [m.content for m in sent]
    finally:
        other.close_all()


def test_compact_on_demand_and_in_words_when_there_is_nothing_to_summarise(app, qtbot, smollm2: Path) -> None:
    w = app.open(settings("rolling_window"))  # never compacts by itself
    load(qtbot, w, smollm2)
    c = w.controller
    refused: list[str] = []
    c.compaction.refused.connect(refused.append)
    w.compact_action.trigger()
    qtbot.waitUntil(lambda: bool(refused), timeout=ANSWER_TIMEOUT)
    assert refused == ["There is nothing to summarise yet: no answer in this chat."]
    assert w.notice.text() == refused[0] and summary_rows(w) == [] and not c.busy

    f = send(qtbot, w, QUESTIONS[0])
    assert f.metrics.prompt_tokens + f.metrics.completion_tokens < threshold(N_CTX) and summary_rows(w) == []
    # Stop stops a summary as it stops an answer: the chat is left as it was.
    w.compact_action.trigger()
    assert c.busy and w.transcript.row(2).role == SUMMARY
    c.stop()
    qtbot.waitUntil(lambda: len(refused) == 2, timeout=ANSWER_TIMEOUT)
    assert refused[1] == "The summary was stopped: the chat is left as it was."
    assert summary_rows(w) == [] and not c.busy and [r.role for r in w.transcript.rows()] == ["user", "assistant"]
    with qtbot.waitSignal(c.compaction.compacted, timeout=ANSWER_TIMEOUT) as made:
        next(s for s in w.shortcuts if s.objectName() == "shortcut-compact").activated.emit()
    summary = made.args[0]
    assert summary_rows(w) == [2] and w.transcript.row(2).content == summary.text
    assert summary.note.startswith("1 earlier turn summarised") and w.notice.text() == f"{summary.note}."
    assert [m.role for m in c.messages()] == ["system"]
    # A second one at once has no answer after the first to fold.
    w.compact_action.trigger()
    qtbot.waitUntil(lambda: len(refused) == 3, timeout=ANSWER_TIMEOUT)
    assert "nothing to summarise" in refused[2] and summary_rows(w) == [2]
