"""The KV cache follows the conversation in the real window: saved on leaving, restored on return."""

from __future__ import annotations

from pathlib import Path

from prefill.engine.local.kv_disk import KvDiskCache, Usage
from tests.ui.conftest import load, send, small_settings


def saved_cache(app) -> KvDiskCache:
    return KvDiskCache(app.data / "kv", min_free=0)


def test_switching_away_saves_and_coming_back_restores(app, qtbot, smollm2: Path) -> None:
    w = app.open(small_settings(max_tokens=12), saved_cache(app))
    load(qtbot, w, smollm2)
    send(qtbot, w, "What is a comet?")
    first = w.controller.conversation_id
    held = len(w.engine.worker.engine.cached_tokens)
    with qtbot.waitSignal(w.cache_usage_changed, timeout=30_000,
                          check_params_cb=lambda u: isinstance(u, Usage) and u.files == 1):
        w.controller.new_conversation()  # leaving the chat saves its cache, on the engine thread
    assert w.cache_usage is not None and w.cache_usage.bytes > 0
    send(qtbot, w, "Say hello in French.")
    with qtbot.waitSignal(w.controller.conversation_opened, timeout=10_000):
        w.controller.open_conversation(first)
    f = send(qtbot, w, "Where do comets come from?")
    assert f.metrics.cached_tokens == held and f.metrics.evaluated_tokens < 30
    assert w.sidebar.text("restored").startswith(f"restored {held:,} tokens from disk in ")
    resumed = len(w.engine.worker.engine.cached_tokens)
    qtbot.waitUntil(lambda: w.store.pending() == 0)
    app.close(w)  # quitting saves the conversation's cache too

    w2 = app.open(small_settings(max_tokens=12), saved_cache(app))
    load(qtbot, w2, smollm2)
    with qtbot.waitSignal(w2.controller.conversation_opened, timeout=10_000):
        w2.controller.open_conversation(first)
    f2 = send(qtbot, w2, "Are they dangerous?")
    assert f2.metrics.cached_tokens == resumed and f2.metrics.evaluated_tokens < 30
    assert w2.sidebar.text("restored").startswith(f"restored {resumed:,} tokens from disk in ")
