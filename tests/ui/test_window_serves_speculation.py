"""The window's served slots speculate as its chat engine does: model.speculative reaches the
server's ServeOptions, and the window's own request, a slot of that server, drafts from its text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import httpx2 as httpx

from tests.ui.conftest import load, send, small_settings

START_MS = 60_000
COPY = ("Repeat this text exactly:\n\nThe river town woke slowly that spring. Fishermen mended their nets along "
        "the stone quay while the baker set out loaves still warm from the oven.")


def test_a_served_window_slot_reports_its_drafts(app, qtbot, smollm2: Path) -> None:
    s = small_settings(n_ctx=1024, max_tokens=40)
    s = replace(s, model=replace(s.model, speculative="ngram", flash_attn=True),
                sampling=replace(s.sampling, repeat_penalty=1.0))
    w = app.open(s)
    load(qtbot, w, smollm2)
    w.serve_action.setChecked(True)
    panel = w.server_dock.widget()
    panel.port.setValue(0)
    panel.parallel.setValue(1)
    with qtbot.waitSignal(panel.controller.started, timeout=START_MS) as started:
        panel.switch.setChecked(True)
    worker = w.engine.worker
    assert worker.server.options.speculative == "ngram"
    answer = send(qtbot, w, COPY)
    assert answer.text and answer.metrics.draft_n_accepted > 0
    slots = httpx.get(started.args[0] + "/slots", timeout=30).json()
    assert slots["speculative"] == "ngram" and slots["draft_n_accepted"] > 0
    with qtbot.waitSignal(panel.controller.stopped, timeout=30_000):
        panel.switch.setChecked(False)


def test_slots_that_cannot_speculate_say_why_in_the_window(app, qtbot, smollm2: Path) -> None:
    s = small_settings(n_ctx=1024, max_tokens=8)
    s = replace(s, model=replace(s.model, speculative="ngram", flash_attn=False),
                sampling=replace(s.sampling, repeat_penalty=1.0))
    w = app.open(s)
    load(qtbot, w, smollm2)
    w.show_notice("")
    w.serve_action.setChecked(True)
    panel = w.server_dock.widget()
    panel.port.setValue(0)
    panel.parallel.setValue(1)
    with qtbot.waitSignal(panel.controller.started, timeout=START_MS):
        panel.switch.setChecked(True)
    qtbot.waitUntil(lambda: w.notice.isVisible(), timeout=30_000)
    said = w.notice.text()
    assert said.startswith("The server's slots decode one token per step:") and "flash attention" in said
    with qtbot.waitSignal(panel.controller.stopped, timeout=30_000):
        panel.switch.setChecked(False)
