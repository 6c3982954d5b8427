"""The window's chat as one of the server's slots: one copy of the model, shared by the window and
HTTP clients in one batch, and the chat's own engine back when the server stops."""

from __future__ import annotations

import threading
from pathlib import Path

from openai import OpenAI

from prefill.engine.batch.slot_chat import LABEL, SlotChat
from tests.ui.conftest import load, send, small_settings, start_serving, stop_serving

START_MS = 60_000


def request_labels(panel) -> set[str]:
    m = panel.slots
    return {m.data(m.index(r, 2)) for r in range(m.rowCount())}


def test_the_window_chat_is_a_slot_beside_a_client(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=60))
    load(qtbot, w, smollm2)
    before = send(qtbot, w, "Name a colour.")
    assert before.reason in ("stop", "length") and before.text

    url = start_serving(qtbot, w)
    panel = w.server_dock.widget()
    assert url.startswith("http://127.0.0.1:")
    worker = w.engine.worker
    qtbot.waitUntil(lambda: isinstance(worker.engine, SlotChat), timeout=START_MS)
    assert worker.engine.scheduler is worker.server.scheduler  # one copy of the model, the server's
    assert "one of the server's requests" in w.notice.text()

    # An HTTP client keeps a slot decoding while the window asks its question.
    client = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    stream = client.chat.completions.create(
        model=client.models.list().data[0].id, messages=[{"role": "user", "content": "Count to a thousand."}],
        stream=True, max_tokens=100_000, extra_body={"ignore_eos": True})
    first = threading.Event()
    reader = threading.Thread(target=lambda: (next(iter(stream)), first.set()), daemon=True)
    reader.start()
    assert first.wait(60)
    seen: set[str] = set()
    panel.controller.snapshot.connect(lambda snap: seen.update(s.label for s in snap.slots if s.state != "idle"))
    answer = send(qtbot, w, "And another colour?")
    assert answer.reason in ("stop", "length") and answer.text
    assert answer.metrics.prompt_tokens > 0 and answer.metrics.kv_total > 0  # measured, in the shared cache
    assert LABEL in seen and len(seen) >= 2  # the window's request and the client's, slots side by side
    assert worker.server.scheduler.snapshot().peak_batch_seqs >= 2  # decoded in one batch
    assert w.transcript.row(w.transcript.rowCount() - 1).content == answer.text
    stream.close()
    qtbot.waitUntil(lambda: panel.figure("In flight") == "0", timeout=START_MS)

    stop_serving(qtbot, w)
    qtbot.waitUntil(lambda: type(worker.engine).__name__ == "ChatEngine", timeout=START_MS)
    after = send(qtbot, w, "One more colour.")
    assert after.reason in ("stop", "length") and after.text


def test_with_one_slot_the_window_waits_in_the_queue_and_can_stop_there(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=30))
    load(qtbot, w, smollm2)
    url = start_serving(qtbot, w, parallel=1)
    panel = w.server_dock.widget()
    client = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
    stream = client.chat.completions.create(
        model=client.models.list().data[0].id, messages=[{"role": "user", "content": "Count to a thousand."}],
        stream=True, max_tokens=100_000, extra_body={"ignore_eos": True})
    first = threading.Event()
    threading.Thread(target=lambda: (next(iter(stream)), first.set()), daemon=True).start()
    assert first.wait(60)

    c = w.controller
    with qtbot.waitSignal(c.answer_finished, timeout=START_MS) as finished:
        c.send("Name a colour.")
        qtbot.waitUntil(lambda: panel.figure("Queued") == "1", timeout=START_MS)  # the window waits its turn
        assert w.transcript.row(1).streaming and not w.transcript.row(1).content
        c.stop()
    f = finished.args[0]
    assert f.reason == "cancelled" and f.text == "" and f.metrics.completion_tokens == 0
    qtbot.waitUntil(lambda: panel.figure("Queued") == "0", timeout=START_MS)
    assert worker_slots_busy(w) == 1  # the client's request went on

    stream.close()  # its slot frees; the window's next question gets it
    answer = send(qtbot, w, "What is the capital of France?")
    assert answer.reason in ("stop", "length") and answer.metrics.prompt_tokens > 0


def worker_slots_busy(w) -> int:
    return sum(1 for s in w.engine.worker.server.scheduler.snapshot().slots if s.state != "idle")
