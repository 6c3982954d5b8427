"""The sidebar in plain words: every figure labelled for a person and explained in the engine's terms on
hover, compact (a headline over the plot, then each label and its value on one row, empty ones left
out), the speed plot kept after any answer, and the open chat's last answer shown from its stored
figures, its curve included."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QFormLayout, QLabel

from prefill.engine.events import Finished, MetricsSnapshot
from prefill.ui.chat.sidebar.sidebar import EngineSidebar, context_words, last_answer_figures, stored_snapshot
from prefill.ui.chat.sidebar.sidebar_plot import CURVE_KEY, CURVE_STEPS, RatePlot, curve_figure, stored_curve
from prefill.ui.chat.sidebar.sidebar_words import FIGURES, GROUPS
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
    form = value.parentWidget().form  # the figure's card
    assert isinstance(form, QFormLayout)
    title = form.labelForField(value)
    assert isinstance(title, QLabel)
    return title


HEADLINE = ("decode", "ttft")  # large, over the plot, each over its caption rather than in a card's rows


def test_every_figure_in_plain_words_with_the_engines_words_on_hover(qtbot) -> None:
    s = sidebar_of(qtbot)
    assert title_of(s, "prefill").text() == "Reading"
    assert title_of(s, "itl").text() == "Pauses"
    assert s.kv_card.title.text() == "Memory for this chat"
    for key, words in FIGURES.items():
        if key in s.labels and words.label and key not in HEADLINE:
            assert title_of(s, key).text() == words.label
            assert words.tip[:40] in title_of(s, key).toolTip() and words.tip[:40] in s.labels[key].toolTip()
    for key in HEADLINE:
        assert FIGURES[key].tip[:40] in s.labels[key].toolTip()
    tips = " ".join(w.tip for w in FIGURES.values())
    for term in ("KV cell", "Prefill", "Decode", "p95", "p50", "TTFT"):
        assert term in tips
    assert "KV cell" in s.labels["kv"].toolTip() and "p95" in title_of(s, "itl").toolTip()
    assert "tok/s" in s.plot.toolTip() or "tokens per second" in s.plot.toolTip()


def test_one_vocabulary_memory_cells_never_slots(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.set_kv(M)
    assert "memory cells" in s.text("kv") and "memory cell" in s.labels["kv"].toolTip()
    words = " ".join(f"{w.label} {w.tip}" for w in (*FIGURES.values(), *GROUPS.values())).lower()
    assert "slot" not in words.replace("server's slots", "")  # slots are the server's request slots only
    assert FIGURES["ttft"].label == "first word" and "TTFT" not in FIGURES["ttft"].label


def test_a_label_and_its_value_share_one_row(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_finished(Finished("length", "x", M))
    s.details_toggle.setChecked(True)
    for width in (250, 420):  # a 900-px window's sidebar, and a roomy one
        s.resize(width, 900)
        qtbot.waitUntil(lambda width=width: s.width() == width, timeout=2000)
        for key in ("tokens", "prefill", "prompt", "itl", "evaluated"):
            title, value = title_of(s, key), s.labels[key]
            assert value.isVisible(), key

            def one_row(title: QLabel = title, value: QLabel = value) -> bool:
                t, v = title.geometry(), value.geometry()
                beside = v.left() >= t.right()  # not under it
                return beside and v.top() < t.bottom() and t.top() < v.bottom()  # on the same line

            qtbot.waitUntil(one_row, timeout=2000)


def test_a_squeezed_sidebar_stacks_its_figures_rather_than_cutting_them_off(qtbot) -> None:
    from prefill.ui.widgets.tokens import COLUMN

    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_finished(Finished("length", "x", M))
    s.resize(COLUMN.side_min_width - 20, 900)  # a small window with every panel open
    qtbot.waitUntil(lambda: s.scroller.widget().width() <= s.scroller.viewport().width(), timeout=2000)
    qtbot.waitUntil(lambda: s.labels["prompt"].geometry().top() >= title_of(s, "prompt").geometry().bottom(),
                    timeout=2000)  # under its label: no room beside it
    s.resize(COLUMN.side_min_width + 40, 900)
    qtbot.waitUntil(lambda: s.labels["prompt"].geometry().top() < title_of(s, "prompt").geometry().bottom(),
                    timeout=2000)  # beside it again


def test_the_headline_shows_the_last_answers_speed_and_first_word(qtbot) -> None:
    s = sidebar_of(qtbot)
    assert not s.headline.figures.isVisible() and s.headline.state.text()  # no answer yet: said, not dashed
    assert not s.answer_card.isVisible()  # and no empty card
    s.begin_answer()
    assert (s.text("decode"), s.text("ttft")) == ("…", "…")
    s.on_finished(Finished("length", "x", M))
    assert s.text("decode") == "20.0 tok/s" and s.text("ttft") == "120 ms"
    assert s.headline.figures.isVisible() and not s.headline.state.isVisible()
    assert s.headline.speed.mapTo(s.headline, QPoint(0, 0)).y() < s.plot.y()  # over the plot
    s.begin_answer()
    s.on_finished(Finished("stop", "y", MetricsSnapshot(completion_tokens=9, decode_tps=61.25, ttft_ms=33.0)))
    assert s.text("decode") == "61.2 tok/s" and s.text("ttft") == "33 ms"  # the last answer's, not the first's


def test_figures_with_nothing_to_say_are_left_out_not_dashed(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_finished(Finished("stop", "x", MetricsSnapshot(completion_tokens=3, decode_tps=5.0, ttft_ms=9.0)))
    s.details_toggle.setChecked(True)
    for key in ("tools", "restored", "images", "ttfa", "backend", "memory"):
        assert not s.shows(key) and not s.labels[key].isVisible() and not title_of(s, key).isVisible(), key
    shown = [label.text() for label in s.findChildren(QLabel) if label.isVisible()]
    assert "—" not in shown and "-" not in shown


def test_details_are_folded_until_opened(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_finished(Finished("length", "x", M))
    assert not s.labels["itl"].isVisible() and s.text("itl") == "48.0 ms · worst 5% 70.0 ms"  # kept, folded
    s.details_toggle.click()
    assert s.labels["itl"].isVisible()
    s.details_toggle.click()
    assert not s.labels["itl"].isVisible()


def test_a_refused_answer_says_so_instead_of_waiting(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_failed("The conversation is 40 tokens too long for the 256-token context.")
    texts = [label.text() for label in s.findChildren(QLabel)]
    assert "…" not in texts
    assert s.headline.state.isVisible() and "too long" in s.headline.state.text()
    s.on_failed("a late failure of another request")  # not waiting for one: nothing changes
    assert "too long" in s.headline.state.text()


def test_figures_and_finish_reasons_in_words(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_metrics(M)
    assert s.text("kv") == "114 of 4,096 memory cells · 2.0 of 96 MiB"
    assert s.text("itl") == "48.0 ms · worst 5% 70.0 ms"
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
    assert s.plot.points == pytest.approx([20.0]) and s.plot.average_only  # no curve kept: its average, dashed
    s.show_answer({"completion_tokens": 5, "decode_tps": 9.0, "ttft_ms": 40.0})  # kept without its reading
    assert s.text("decode") == "9.0 tok/s" and not s.shows("prefill")  # not "0 tok/s · 0 ms"
    s.show_answer({"completion_tokens": 1, "decode_tps": 9.0, "ttft_ms": 40.0})
    assert s.text("tokens") == "1 token"
    s.show_answer({})  # a new chat
    assert not s.shows("tokens") and not s.shows("decode") and s.plot.points == []


def test_stored_figures_are_checked() -> None:
    m = stored_snapshot({"decode_tps": "fast", "completion_tokens": 7, "ttft_ms": float("nan"), "kv_used": True,
                         "tool_calls": [{"x": 1}], "prefill_ms": 12, "finish_reason": "stop"})
    assert m == MetricsSnapshot(completion_tokens=7, prefill_ms=12.0, finish_reason="stop")
    assert last_answer_figures(TranscriptModel()) == {}


def test_a_stored_chats_plot_has_its_stored_points(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    for n, tps in ((5, 40.0), (20, 50.0), (30, 30.0), (44, 32.0)):  # an answer that sped up, slowed, sped up
        s.on_metrics(MetricsSnapshot(completion_tokens=n, decode_tps=tps, ttft_ms=100.0))
    live = list(s.plot.segments)
    assert len(live) == 4
    kept = {**MetricsSnapshot(completion_tokens=44, decode_tps=35.0, ttft_ms=100.0).as_dict(),
            CURVE_KEY: s.plot.curve()}
    s.show_answer({})  # another chat, then this one again
    s.show_answer(kept)
    assert len(s.plot.segments) == 4 and not s.plot.average_only
    assert flat(s.plot.segments) == pytest.approx([round(x, 2) for x in flat(live)], abs=0.06)
    assert max(s.plot.points) > 1.5 * min(s.plot.points)  # the curve, not a flat line


def flat(segments: list[tuple[float, float, float]]) -> list[float]:
    return [x for segment in segments for x in segment]


def test_a_long_curve_is_kept_in_few_steps_with_its_tokens() -> None:
    steps = [(100.0 + 250 * i, 350.0 + 250 * i, 10.0 + i % 7) for i in range(200)]
    kept = stored_curve(curve_figure(steps))
    assert 0 < len(kept) <= CURVE_STEPS
    assert kept[0][0] == 100.0 and kept[-1][1] == pytest.approx(steps[-1][1])

    def tokens(curve: list[tuple[float, float, float]]) -> float:
        return sum(rate * (end - start) / 1000 for start, end, rate in curve)

    assert tokens(kept) == pytest.approx(tokens(steps), rel=1e-3)


def test_a_stored_curve_is_checked() -> None:
    assert stored_curve([[0, 10, 5.0], [10, 20, 6]]) == [(0.0, 10.0, 5.0), (10.0, 20.0, 6.0)]
    for bad in ("curve", [[0, 10]], [[0, 10, -1]], [[10, 5, 1]], [[0, 10, 1], [5, 20, 1]], [[0, 10, True]],
                [[0, float("inf"), 1]], [[0, 1, 1]] * (CURVE_STEPS + 1)):
        assert stored_curve(bad) == [], bad


def test_the_context_says_when_llama_cpp_rounded_it_up(qtbot) -> None:
    from pathlib import Path

    from prefill.session.loaded import LoadedModel

    assert context_words(4096, 4096) == "4,096 tokens"
    assert context_words(256, 128) == "256 tokens (asked for 128: llama.cpp rounds up)"
    assert context_words(0, 0) == ""  # a remote model: not known, left out
    s = sidebar_of(qtbot)
    s.set_model(LoadedModel(path=Path("/m/m.gguf"), name="m", n_ctx=256, n_layer=1, backend_summary="CPU",
                            backend_warning="", gpu_build=False, load_ms=1.0, bytes_per_cell=1, model_bytes=1,
                            n_ctx_asked=128))
    assert s.text("context").count("128") == 1 and s.text("context").startswith("256 tokens")


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
    assert not sidebar.shows("memory")
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
    assert not sidebar.shows("memory")


def test_the_headline_fits_the_sidebar_whatever_its_width(qtbot) -> None:
    s = sidebar_of(qtbot)
    s.begin_answer()
    s.on_finished(Finished("stop", "x", MetricsSnapshot(completion_tokens=100, decode_tps=14.7, ttft_ms=1605.0)))
    for width in (180, 240, 270, 420):
        s.resize(width, 900)
        qtbot.waitUntil(lambda width=width: s.width() == width, timeout=2000)
        qtbot.waitUntil(lambda: s.scroller.widget().width() <= s.scroller.viewport().width(), timeout=2000)
        first = s.headline.first_word
        assert first.mapTo(s, QPoint(first.width(), 0)).x() <= s.scroller.viewport().width(), width  # not cut
