"""The sidebar in plain words: every figure labelled for a person and explained in the engine's terms on
hover, the speed plot kept after any answer, and the open chat's last answer shown from its stored figures."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QFormLayout, QLabel

from prefill.engine.events import Finished, MetricsSnapshot
from prefill.ui.chat.sidebar.sidebar import EngineSidebar, last_answer_figures, stored_snapshot
from prefill.ui.chat.sidebar.sidebar_plot import RatePlot
from prefill.ui.chat.sidebar.sidebar_words import FIGURES
from prefill.ui.chat.transcript.finish_words import finish_words
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel

M = MetricsSnapshot(prompt_tokens=74, cached_tokens=10, evaluated_tokens=64, completion_tokens=40, ttft_ms=120.0,
                    prefill_ms=100.0, prefill_tps=640.0, decode_tps=20.0, itl_p50_ms=48.0, itl_p95_ms=70.0,
                    kv_used=114, kv_total=4096, kv_bytes=2 * 1024 * 1024, kv_bytes_total=96 * 1024 * 1024,
                    finish_reason="length")


def sidebar_of(qtbot) -> EngineSidebar:
    s = EngineSidebar()
    qtbot.addWidget(s)
    s.show()
    return s


def title_of(s: EngineSidebar, key: str) -> QLabel:
    value = s.labels[key]
    form = value.parentWidget().layout()
    assert isinstance(form, QFormLayout)
    title = form.labelForField(value)
    assert isinstance(title, QLabel)
    return title


def test_every_figure_in_plain_words_with_the_engines_words_on_hover(qtbot) -> None:
    s = sidebar_of(qtbot)
    assert title_of(s, "prefill").text() == "Reading your message"
    assert title_of(s, "decode").text() == "Writing speed"
    assert title_of(s, "itl").text() == "Pause between words\n(typical / worst 5%)"
    assert s.labels["kv"].parentWidget().title() == "Memory for this chat"
    for key, words in FIGURES.items():
        if key in s.labels and words.label:
            assert title_of(s, key).text() == words.label
            assert words.tip[:40] in title_of(s, key).toolTip() and words.tip[:40] in s.labels[key].toolTip()
    tips = " ".join(w.tip for w in FIGURES.values())
    for term in ("KV cell", "Prefill", "Decode", "p95", "p50", "TTFT"):
        assert term in tips
    assert "KV cell" in s.labels["kv"].toolTip() and "p95" in title_of(s, "itl").toolTip()
    assert "tok/s" in s.plot.toolTip() or "tokens per second" in s.plot.toolTip()


def test_figures_and_finish_reasons_in_words(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_metrics(M)
    assert s.text("kv") == "114 of 4,096 cells · 2.0 of 96 MiB"
    assert s.text("itl") == "48.0 / 70.0 ms"
    s.on_finished(Finished("length", "x", M))
    assert s.text("tokens") == f"40 tokens · {finish_words('length')}"
    for reason, words in (("stop", "finished"), ("cancelled", "stopped")):
        s.on_finished(Finished(reason, "x", MetricsSnapshot(completion_tokens=3, decode_tps=5.0, ttft_ms=9.0,
                                                            finish_reason=reason)))
        assert s.text("tokens") == f"3 tokens · {words}"


def test_the_plot_keeps_a_curve_after_a_short_answer(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_finished(Finished("stop", "Hi.", MetricsSnapshot(completion_tokens=3, decode_tps=30.0, ttft_ms=80.0)))
    assert s.plot.points == pytest.approx([30.0])  # one interval, from the first token to the last
    start, end, _ = s.plot.segments[0]
    assert start == 80.0 and end > start
    s.plot.resize(280, 110)
    assert not s.plot.grab().isNull()


def test_the_plot_steps_through_snapshots_and_resets(qtbot) -> None:
    plot = RatePlot()
    qtbot.addWidget(plot)
    for n, tps in ((10, 20.0), (20, 20.0), (30, 15.0)):
        plot.add_snapshot(MetricsSnapshot(completion_tokens=n, decode_tps=tps, ttft_ms=100.0))
    assert len(plot.points) == 3 and all(p > 0 for p in plot.points)
    assert [a for a, _, _ in plot.segments][1:] == [b for _, b, _ in plot.segments][:-1]  # contiguous in time
    plot.resize(300, 110)
    empty = RatePlot()
    qtbot.addWidget(empty)
    empty.resize(300, 110)
    assert plot.grab().toImage() != empty.grab().toImage()
    plot.reset()
    assert plot.points == []


def test_opening_a_chat_shows_its_last_answer_and_a_new_chat_clears(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_finished(Finished("stop", "x", MetricsSnapshot(completion_tokens=99, decode_tps=50.0, ttft_ms=5.0,
                                                       finish_reason="stop")))
    transcript = TranscriptModel()
    transcript.set_rows([Row("user", ["hi"]), Row("assistant", ["old"], {**M.as_dict(), "finish_reason": "stop"}),
                         Row("user", ["again"]), Row("assistant", ["new"], M.as_dict()), Row("notice", ["n"])])
    s.show_answer(last_answer_figures(transcript))
    assert s.text("tokens") == f"40 tokens · {finish_words('length')}"
    assert s.text("decode") == "20.0 tok/s" and s.text("prompt") == "74 tokens"
    assert s.plot.points == pytest.approx([20.0])
    s.show_answer({})  # a new chat
    assert s.text("tokens") == "—" and s.text("decode") == "—" and s.plot.points == []


def test_stored_figures_are_checked() -> None:
    m = stored_snapshot({"decode_tps": "fast", "completion_tokens": 7, "ttft_ms": float("nan"), "kv_used": True,
                         "tool_calls": [{"x": 1}], "prefill_ms": 12, "finish_reason": "stop"})
    assert m == MetricsSnapshot(completion_tokens=7, prefill_ms=12.0, finish_reason="stop")
    assert last_answer_figures(TranscriptModel()) == {}


def test_a_narrow_sidebar_puts_each_figure_under_its_label(qtbot) -> None:
    s = sidebar_of(qtbot)
    form = s.labels["decode"].parentWidget().layout()
    assert isinstance(form, QFormLayout)
    s.resize(240, 600)
    qtbot.waitUntil(lambda: form.rowWrapPolicy() == QFormLayout.RowWrapPolicy.WrapAllRows, timeout=2000)
    s.resize(420, 600)
    qtbot.waitUntil(lambda: form.rowWrapPolicy() == QFormLayout.RowWrapPolicy.DontWrapRows, timeout=2000)


def test_the_model_group_says_where_it_runs_and_whether_it_reads_images(qtbot) -> None:
    from dataclasses import replace
    from pathlib import Path

    from prefill.engine.llama.offload import DeviceReport
    from prefill.session.loaded import LoadedModel

    sidebar = sidebar_of(qtbot)
    m = LoadedModel(path=Path("/m/model.gguf"), name="m", n_ctx=2048, n_layer=30, backend_summary="H200: 30/30 layers",
                    backend_warning="", gpu_build=True, load_ms=1.0, bytes_per_cell=1, model_bytes=1)
    sidebar.set_model(replace(m, vision="Images: mmproj-f16.gguf", projector="/m/mmproj-f16.gguf",
                              device=DeviceReport(True, "all", 30, 30, "H200", vram_bytes=300 * 1024 * 1024)))
    assert sidebar.text("backend") == "H200: 30/30 layers · 300 MiB of GPU memory"
    assert sidebar.text("vision") == "yes, read by mmproj-f16.gguf"
    note = "Images need this model's projector: an mmproj-*.gguf from the model's repository"
    sidebar.set_model(replace(m, vision=note))
    assert sidebar.text("backend") == "H200: 30/30 layers" and sidebar.text("vision") == note
    sidebar.set_model(m)
    assert sidebar.text("vision") == "text only"


def test_the_memory_line_sums_the_resident_models_against_the_budget(qtbot) -> None:
    from prefill.pool.memory import ModelMemory
    from prefill.session.residents import ResidentModel, ResidentModels

    sidebar = sidebar_of(qtbot)
    assert sidebar.text("memory") == "—"
    mib = 1 << 20
    sidebar.set_residents(ResidentModels((ResidentModel("/m/a.gguf", "A", ModelMemory(300 * mib, 200 * mib, 12 * mib),
                                                        False, True),
                                          ResidentModel("/m/b.gguf", "B", ModelMemory(500 * mib, 0, 0, measured=True,
                                                                                     compute_measured=True),
                                                        True, False)),
                                         budget=8 << 30))
    assert sidebar.text("memory") == "2 models · 1012.0 MiB of 8.0 GiB"
    tip = sidebar.labels["memory"].toolTip()
    assert "B: 500.0 MiB, measured (pinned)" in tip and "A: 512.0 MiB, estimated (in use)" in tip  # which are guesses
    sidebar.set_residents(ResidentModels())
    assert sidebar.text("memory") == "—"
