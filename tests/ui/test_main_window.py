"""The window with the real model: stream, stop, regenerate, edit, history, search, overflow, bad model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from prefill.engine.events import Finished
from prefill.store import HistoryStore
from tests.ui.conftest import ANSWER_TIMEOUT, load, send, send_and_stop, small_settings


def test_streams_an_answer_and_sidebar_matches_the_engine(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings())
    load(qtbot, w, smollm2)
    assert w.stack.currentWidget() is w.chat_view
    f: Finished = send(qtbot, w, "What is the capital of France?")
    assert f.text.strip()
    rows = w.transcript.rows()
    assert [r.role for r in rows] == ["user", "assistant"]
    assert rows[1].content == f.text and not rows[1].streaming
    assert w.chat_view.live_widget(1).text() == f.text
    m = f.metrics
    side = w.sidebar
    assert side.text("decode") == f"{m.decode_tps:.1f} tok/s"
    assert side.text("ttft").startswith(f"{m.ttft_ms:.0f} ms")
    assert side.text("prompt") == f"{m.prompt_tokens} tokens"
    assert side.text("evaluated") == str(m.evaluated_tokens)
    assert side.text("kv").startswith(f"{m.kv_used:,} of {m.kv_total:,} memory cells")
    assert side.kv_bar.value() == int(m.kv_used / m.kv_total * 1000)
    assert f"{m.completion_tokens} tokens" in w.chat_view.live_widget(1).figures.text()


def test_stop_regenerate_edit_delete(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=400))
    load(qtbot, w, smollm2)
    c = w.controller
    stopped: Finished = send_and_stop(qtbot, w, "Write a very long story about a dragon and a knight.")
    assert stopped.reason == "cancelled" and stopped.metrics.completion_tokens < 400
    w.settings = small_settings(max_tokens=24)

    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        c.edits.regenerate(1)
    assert len(w.transcript.rows()) == 2
    assert int(w.sidebar.text("evaluated")) <= 1  # the prompt was in the cache already

    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        c.edits.edit(0, "Say hello in French.")
    rows = w.transcript.rows()
    assert [r.role for r in rows] == ["user", "assistant"] and rows[0].content == "Say hello in French."

    qtbot.waitUntil(lambda: rows[1].message_id >= 0 or w.transcript.row(1).message_id >= 0)
    c.edits.delete(1)
    assert [r.role for r in w.transcript.rows()] == ["user"]
    c.pending.timer.timeout.emit()  # Undo was not taken: the delete reaches the history
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    history = HistoryStore(app.data / "history.sqlite3")
    try:
        stored = history.messages(c.conversation_id)
        assert [(m.role, m.content) for m in stored] == [("user", "Say hello in French.")]
    finally:
        history.close()

    deleted = c.conversation_id
    w.history.delete(deleted)  # the chat shown is deleted: the window holds none, and shows none
    assert c.conversation_id is None and w.transcript.rows() == []
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    history = HistoryStore(app.data / "history.sqlite3")
    try:
        assert deleted not in [conv.id for conv in history.list_conversations()]
    finally:
        history.close()


def test_history_survives_reopening_and_search_finds_it(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings())
    load(qtbot, w, smollm2)
    f = send(qtbot, w, "Tell me about zebras")
    cid = w.controller.conversation_id
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    app.close(w)

    w2 = app.open()
    w2.refresh_conversations()
    qtbot.waitUntil(lambda: w2.conversations.list.count() == 1, timeout=5000)
    assert w2.conversations.list.item(0).text().startswith("Tell me about zebras")
    with qtbot.waitSignal(w2.controller.conversation_opened, timeout=5000):
        w2.conversations.list.setCurrentRow(0)
    rows = w2.transcript.rows()
    assert [(r.role, r.content) for r in rows] == [("user", "Tell me about zebras"), ("assistant", f.text)]
    assert rows[1].figures["completion_tokens"] == f.metrics.completion_tokens
    assert w2.controller.conversation_id == cid

    w2.conversations.search.setText("zebras")
    qtbot.waitUntil(lambda: "\n" in (w2.conversations.list.item(0).text() if w2.conversations.list.count() else ""),
                    timeout=5000)
    w2.conversations.search.setText("nothing-like-this-anywhere")
    qtbot.waitUntil(lambda: w2.conversations.list.count() == 0, timeout=5000)


def test_prompt_longer_than_context_follows_the_policy(app, qtbot, smollm2: Path) -> None:
    long_text = "Please remember this sentence about the weather in Paris. " * 30  # ~300 tokens
    w = app.open(small_settings(n_ctx=256, policy="stop", max_tokens=16))
    load(qtbot, w, smollm2)
    with qtbot.waitSignal(w.controller.busy_changed, timeout=ANSWER_TIMEOUT, check_params_cb=lambda b: not b):
        w.controller.send(long_text)
    assert "too long" in w.notice.text() and w.notice.isVisible()
    assert [r.role for r in w.transcript.rows()] == ["user"]  # no empty answer left behind
    app.close(w)

    w = app.open(small_settings(n_ctx=256, policy="rolling_window", max_tokens=16))
    load(qtbot, w, smollm2)
    notices: list[str] = []
    w.controller.notice.connect(notices.append)
    send(qtbot, w, "Remember: the password is blue.")
    send(qtbot, w, "Please remember this sentence about the weather in Paris. " * 16)  # ~190 tokens
    for _ in range(4):  # short turns until the 256-token context overflows
        send(qtbot, w, "And what about the weather in Rome?")
        if any("left out" in n for n in notices):
            break
    said = [n for n in notices if "left out" in n]
    assert said and "rolling window" in said[-1], notices
    assert w.notice.text() == said[-1]  # still shown after the answer that needed it


def test_bad_model_says_why_and_window_stays_usable(app, qtbot, tmp_path: Path, smollm2: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64)
    w = app.open(small_settings())
    w.load_model(str(bad))
    qtbot.waitUntil(lambda: "could not be loaded" in w.notice.text(), timeout=10_000)
    assert "GGUF" in w.notice.text() or "truncated" in w.notice.text()
    assert w.sidebar.warning.isVisible()
    load(qtbot, w, smollm2)  # and the next, good, model loads fine
    assert send(qtbot, w, "Hi").text


def test_models_page_lists_the_bundled_model_and_loads_it(app, qtbot, tmp_path: Path, smollm2: Path,
                                                          monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hugging Face cache
    w = app.open(replace(small_settings(), ui=replace(small_settings().ui, models_dir=str(tmp_path / "models"))))
    w.open_models()
    panel = w.models_page.library_panel
    qtbot.waitUntil(lambda: any(m.path == smollm2 for m in panel.models), timeout=10_000)
    panel.select_row([m.path for m in panel.models].index(smollm2))
    with qtbot.waitSignal(w.model_loaded, timeout=60_000):
        panel.load_button.click()  # one click from the library to a loaded model
    assert w.loaded is not None and w.loaded.path == smollm2
    # the estimate beside what the load used, said on the Models page, not under the chat
    qtbot.waitUntil(lambda: "estimated" in w.models_page.message.text(), timeout=10_000)
    assert "estimated" not in w.notice.text()
