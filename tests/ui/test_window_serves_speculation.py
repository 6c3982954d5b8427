"""The window's served slots speculate as its chat engine does: model.speculative reaches the
server's ServeOptions, and the window's own request, a slot of that server, drafts from its text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import httpx2 as httpx

from prefill.engine.settings import FlashAttn
from prefill.ui.main_window import MainWindow
from tests.ui.conftest import load, send, small_settings, start_serving, stop_serving

START_MS = 60_000
COPY = ("Repeat this text exactly:\n\nThe river town woke slowly that spring. Fishermen mended their nets along "
        "the stone quay while the baker set out loaves still warm from the oven.")


def serving(app, qtbot, smollm2: Path, flash_attn: FlashAttn, max_tokens: int) -> tuple[MainWindow, str]:
    """A window whose chat speculates with n-gram drafts, serving its model on one slot: it and the URL."""
    s = small_settings(n_ctx=1024, max_tokens=max_tokens)
    s = replace(s, model=replace(s.model, speculative="ngram", flash_attn=flash_attn),
                sampling=replace(s.sampling, repeat_penalty=1.0))
    w = app.open(s)
    load(qtbot, w, smollm2)
    w.show_notice("")
    return w, start_serving(qtbot, w, parallel=1)


def test_a_served_window_slot_reports_its_drafts(app, qtbot, smollm2: Path) -> None:
    w, url = serving(app, qtbot, smollm2, flash_attn="on", max_tokens=40)
    assert w.engine.worker.server.options.speculation.mode == "ngram"
    answer = send(qtbot, w, COPY)
    assert answer.text and answer.metrics.draft_n_accepted > 0
    slots = httpx.get(url + "/slots", timeout=30).json()
    assert slots["speculative"] == "ngram" and slots["draft_n_accepted"] > 0
    assert not w.notice.isVisible()  # nothing to say: the slots speculate
    stop_serving(qtbot, w)


def test_slots_that_cannot_speculate_say_why_in_the_window(app, qtbot, smollm2: Path) -> None:
    w, _url = serving(app, qtbot, smollm2, flash_attn="off", max_tokens=8)
    # "Serving this model at …" comes first, then the slots' reason (both queued from the worker's thread)
    qtbot.waitUntil(lambda: w.notice.isVisible() and w.notice.text().startswith("The server's slots"), timeout=30_000)
    said = w.notice.text()
    assert said.startswith("The server's slots decode one token per step:") and "flash attention" in said
    stop_serving(qtbot, w)
