"""Conversations served by remote endpoints, in the window: llama-cpp-python's own server and
`prefill serve` as real processes on 127.0.0.1, and a fault server for what breaks."""

from __future__ import annotations

import os
import stat

from PySide6.QtWidgets import QDialog

from prefill.engine.events import Finished
from prefill.store import HistoryStore
from prefill.store.endpoints import EndpointsFile, SavedEndpoint
from prefill.ui.models.endpoint_dialog import REMOVED, EndpointDialog
from prefill.ui.models.picker import ADD_REMOTE, EDIT_REMOTE, REMOTE
from tests.remote.fault_server import FaultServer
from tests.remote.servers import ALIAS, LlamaCppServer
from tests.server.conftest import Served
from tests.ui.conftest import ANSWER_TIMEOUT, LOAD_TIMEOUT, send, send_and_stop, small_settings


def connect(qtbot, w, endpoint: SavedEndpoint):
    with qtbot.waitSignal(w.model_loaded, timeout=LOAD_TIMEOUT) as blocker:
        w.load_remote(endpoint)
    return blocker.args[0]


def stored(app, cid: int):
    history = HistoryStore(app.data / "history.sqlite3")
    try:
        return history.messages(cid)
    finally:
        history.close()


def test_llama_cpp_server_streams_stops_regenerates_edits_and_keeps_history(
        app, qtbot, llama_cpp: LlamaCppServer) -> None:
    w = app.open(small_settings(max_tokens=300))
    m = connect(qtbot, w, SavedEndpoint("llama-cpp-python", llama_cpp.url, ALIAS))
    assert m.remote == llama_cpp.url + "/v1" and m.name == ALIAS and m.chat_format == "remote"
    assert w.sidebar.text("kv").startswith("unknown")  # not 0 of 0: the remote's cache is out of sight
    assert "counted by the remote" in w.input.count.text()
    c = w.controller

    stopped: Finished = send_and_stop(qtbot, w, "Write a very long story about a dragon and a knight.")
    assert stopped.reason == "cancelled" and stopped.text and stopped.metrics.ttft_ms > 0
    assert w.sidebar.text("kv").startswith("unknown")

    w.settings = small_settings(max_tokens=16)
    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT) as blocker:
        c.edits.regenerate(1)
    again: Finished = blocker.args[0]
    assert again.reason in ("stop", "length") and again.text
    # llama-cpp-python's server streams no `usage`: tokens are counted as chunks arrive, the prompt is unknown
    assert again.metrics.completion_tokens > 0 and again.metrics.prompt_tokens == 0
    assert w.sidebar.text("prompt") == "not reported by the server"
    assert w.sidebar.text("decode") == f"{again.metrics.decode_tps:.1f} tok/s"

    with qtbot.waitSignal(c.answer_finished, timeout=ANSWER_TIMEOUT):
        c.edits.edit(0, "Say hello in French.")
    rows = w.transcript.rows()
    assert [r.role for r in rows] == ["user", "assistant"] and rows[0].content == "Say hello in French."
    follow = send(qtbot, w, "And in Spanish?")
    assert follow.text
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    kept = stored(app, c.conversation_id)
    assert [(r.role, r.content) for r in kept] == [
        ("user", "Say hello in French."), ("assistant", rows[1].content), ("user", "And in Spanish?"),
        ("assistant", follow.text)]
    conv = HistoryStore(app.data / "history.sqlite3")
    try:
        assert llama_cpp.url in conv.conversation(c.conversation_id).model  # which server answered
    finally:
        conv.close()


def test_prefill_serve_as_the_remote_with_its_key(app, qtbot, prefill_server: Served) -> None:
    w = app.open(small_settings(max_tokens=16))
    m = connect(qtbot, w, SavedEndpoint("mine", prefill_server.url, "", prefill_server.key))
    assert m.name == prefill_server.model_id  # the first model it lists
    f = send(qtbot, w, "What is the capital of France?")
    assert f.text and f.metrics.prompt_tokens > 0
    assert f.metrics.cached_tokens >= 0 and not f.metrics.kv_known

    w.load_remote(SavedEndpoint("wrong key", prefill_server.url, "", "sk-wrong"))
    qtbot.waitUntil(lambda: "failed" in w.load_state.text(), timeout=LOAD_TIMEOUT)
    said = w.notice.text()
    assert "refused the key" in said and "Check the endpoint's API key." in said and "sk-wrong" not in said


def test_a_cut_stream_keeps_the_partial_answer_marked(app, qtbot, fault_server: FaultServer) -> None:
    w = app.open(small_settings())
    connect(qtbot, w, SavedEndpoint("faulty", fault_server.url, "fake-a"))
    fault_server.mode = "cut"
    f = send(qtbot, w, "Hello?")
    assert f.reason == "error" and f.text == "Hello" and f.reasoning == "Let me think."
    assert "broke off" in f.error or "ended before" in f.error
    assert "kept, marked incomplete" in w.notice.text()
    row = w.transcript.row(1)
    assert row.content == "Hello" and row.finish_reason == "error" and not row.streaming
    assert "incomplete" in w.chat_view.live_widget(1).figures.text()
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    kept = stored(app, w.controller.conversation_id)
    assert [(r.role, r.content, r.finish_reason) for r in kept][-1] == ("assistant", "Hello", "error")

    fault_server.mode = "429"
    before = w.transcript.rowCount()
    with qtbot.waitSignal(w.controller.busy_changed, timeout=ANSWER_TIMEOUT,
                          check_params_cb=lambda busy: not busy):
        w.controller.send("Again?")
    assert "rate-limiting" in w.notice.text() and "Try again in 7 s" in w.notice.text()
    assert w.transcript.rowCount() == before + 1  # the question stays, to retry
    fault_server.mode = "ok"
    ok = send(qtbot, w, "Once more?")
    assert ok.text == "Hello, world" and ok.metrics.prompt_tokens == 12 and ok.metrics.cached_tokens == 8


def test_an_unreachable_endpoint_says_what_to_do(app, qtbot) -> None:
    w = app.open(small_settings())
    w.load_remote(SavedEndpoint("gone", "http://127.0.0.1:9", ""))
    qtbot.waitUntil(lambda: "failed" in w.load_state.text(), timeout=LOAD_TIMEOUT)
    said = w.notice.text()
    assert "Cannot reach http://127.0.0.1:9" in said and "Check that the server is running" in said


def test_the_dialog_lists_models_saves_the_endpoint_and_the_picker_offers_it(
        app, qtbot, fault_server: FaultServer, monkeypatch) -> None:
    w = app.open(small_settings())
    dialog = EndpointDialog(set(), w)
    qtbot.addWidget(dialog)
    dialog.url.setText("ftp://nowhere")
    dialog.list_button.click()
    assert "http://" in dialog.status.text()
    dialog.url.setText(fault_server.url)
    dialog.key.setText("sk-secret")
    dialog.list_button.click()
    qtbot.waitUntil(lambda: dialog.model.count() == 2, timeout=LOAD_TIMEOUT)
    assert [dialog.model.itemText(i) for i in range(2)] == ["fake-a", "fake-b"]
    assert fault_server.requests[-1][0].get("Authorization") == "Bearer sk-secret"
    dialog.buttons.accepted.emit()
    assert "Give the endpoint a name" in dialog.status.text() and dialog.result() == 0  # not accepted
    dialog.name.setText("Fake box")
    dialog.model.setCurrentIndex(1)
    assert dialog.endpoint() == SavedEndpoint("Fake box", fault_server.url, "fake-b", "sk-secret")
    assert "sk-secret" not in repr(dialog.endpoint())

    # What the window does with an accepted dialog: save it (0600), offer it, connect to it.
    endpoint = dialog.endpoint()
    answer_dialog(monkeypatch, lambda d: fill(d, endpoint))
    with qtbot.waitSignal(w.model_loaded, timeout=LOAD_TIMEOUT) as loaded:
        w.model_combo.activated.emit(w.model_combo.findData(ADD_REMOTE))
    assert loaded.args[0].name == "fake-b" and loaded.args[0].endpoint == "Fake box"
    path = app.data / "endpoints.json"
    assert EndpointsFile(path).load() == [endpoint]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert w.model_combo.currentData() == REMOTE + "Fake box"

    app.close(w)
    w2 = app.open()
    qtbot.waitUntil(lambda: w2.model_combo.findData(REMOTE + "Fake box") >= 0, timeout=5000)
    with qtbot.waitSignal(w2.model_loaded, timeout=LOAD_TIMEOUT):
        w2.model_combo.activated.emit(w2.model_combo.findData(REMOTE + "Fake box"))
    assert send(qtbot, w2, "Hi").text == "Hello, world"

    # Edit it (renamed, the other model), then remove it.
    renamed = SavedEndpoint("Fake box 2", fault_server.url, "fake-a", "sk-secret")
    seen: list[tuple[str, str]] = []
    answer_dialog(monkeypatch, lambda d: (seen.append((d.name.text(), d.key.text())), fill(d, renamed)))
    with qtbot.waitSignal(w2.model_loaded, timeout=LOAD_TIMEOUT) as loaded:
        w2.model_combo.activated.emit(w2.model_combo.findData(EDIT_REMOTE + "Fake box"))
    assert seen == [("Fake box", "sk-secret")]  # the dialog opened filled in
    assert loaded.args[0].name == "fake-a" and EndpointsFile(path).load() == [renamed]
    assert w2.model_combo.findData(REMOTE + "Fake box") < 0 <= w2.model_combo.findData(REMOTE + "Fake box 2")
    answer_dialog(monkeypatch, lambda d: REMOVED)
    w2.model_combo.activated.emit(w2.model_combo.findData(EDIT_REMOTE + "Fake box 2"))
    qtbot.waitUntil(lambda: w2.model_combo.findData(REMOTE + "Fake box 2") < 0, timeout=5000)
    assert EndpointsFile(path).load() == []


def fill(dialog: EndpointDialog, e: SavedEndpoint) -> QDialog.DialogCode:
    dialog.name.setText(e.name)
    dialog.url.setText(e.url)
    dialog.key.setText(e.api_key)
    dialog.model.setEditText(e.model)
    return QDialog.DialogCode.Accepted


def answer_dialog(monkeypatch, answer) -> None:
    """The next endpoint dialog is answered by `answer(dialog)` instead of a person."""
    def exec_(self: EndpointDialog) -> int:
        result = answer(self)
        return result[-1] if isinstance(result, tuple) else result

    monkeypatch.setattr(EndpointDialog, "exec", exec_)
