"""The sidebar's speculation figures and strip: live from the snapshots with draft figures, hidden
without them, kept after the answer, recoloured with the theme, each figure explained."""

from __future__ import annotations

from PySide6.QtGui import QColor

from prefill.engine.events import Finished, MetricsSnapshot
from prefill.ui.chat.sidebar.draft_strip import DraftStrip
from prefill.ui.chat.sidebar.sidebar import SPECULATION_TIPS, EngineSidebar
from prefill.ui.widgets.colours import DARK, LIGHT


def snap(tokens: int, drafted: int = 0, accepted: int = 0, tps: float = 60.0, drift: float = 0.0) -> MetricsSnapshot:
    return MetricsSnapshot(completion_tokens=tokens, draft_n=drafted, draft_n_accepted=accepted, decode_tps=tps,
                           ttft_ms=50.0, draft_drift=drift)


def sidebar(qtbot) -> EngineSidebar:
    s = EngineSidebar()
    qtbot.addWidget(s)
    s.show()
    s.begin_answer()
    return s


def test_hidden_without_drafts(qtbot) -> None:
    s = sidebar(qtbot)
    for n in (5, 10, 20):
        s.on_metrics(snap(n))
    s.on_finished(Finished("stop", "x", snap(20)))
    assert s.speculation_box.isHidden() and not s.strip.columns


def test_live_figures_and_strip_from_snapshots(qtbot) -> None:
    s = sidebar(qtbot)
    s.on_metrics(snap(10, drafted=8, accepted=6, tps=80.0))
    assert s.speculation_box.isVisible()
    assert s.text("spec-drafts") == "8 / 6 · 75% accepted"
    assert s.text("spec-step") == "2.50"  # 10 tokens in 4 model steps
    assert s.text("spec-rate") == "80 tok/s · no answer without it yet to compare"
    assert s.text("spec-exact") == "yes (measured: batches match exactly)"
    s.on_metrics(snap(30, drafted=24, accepted=20, tps=90.0))
    assert s.text("spec-drafts") == "24 / 20 · 83% accepted" and s.text("spec-step") == "3.00"
    assert list(s.strip.columns) == [(6, 4), (14, 6)]
    s.on_finished(Finished("stop", "x", snap(34, drafted=26, accepted=22, tps=91.0)))
    assert list(s.strip.columns) == [(6, 4), (14, 6), (2, 2)]
    assert s.speculation_box.isVisible()  # kept after the answer
    s.begin_answer()  # the next answer starts afresh
    assert s.speculation_box.isHidden() and not s.strip.columns


def test_rate_compared_with_the_models_last_plain_answer(qtbot) -> None:
    s = sidebar(qtbot)
    s.on_metrics(snap(20, tps=50.0))
    s.on_finished(Finished("stop", "x", snap(40, tps=50.0)))
    assert s.speculation_box.isHidden()
    s.begin_answer()
    s.on_metrics(snap(20, drafted=12, accepted=10, tps=75.0))
    assert s.text("spec-rate") == "75 tok/s · 1.50× plain"
    s.on_finished(Finished("stop", "x", snap(40, drafted=30, accepted=25, tps=80.0)))
    assert s.plain_tps[""] == 50.0  # a speculative answer is not the plain reference
    s.set_model(None)


def test_a_model_whose_batches_round_differently_is_not_called_exact(qtbot) -> None:
    s = sidebar(qtbot)
    s.on_metrics(snap(10, drafted=8, accepted=6, drift=0.7))
    assert s.text("spec-exact") == "nearly: batches differ by up to 0.70"
    s.on_metrics(snap(12, drafted=8, accepted=6, drift=-1.0))
    assert s.text("spec-exact") == "not measured yet"


def test_every_figure_is_explained(qtbot) -> None:
    s = sidebar(qtbot)
    for key, tip in SPECULATION_TIPS.items():
        assert tip[:30] in s.labels[key].toolTip()
    assert "accepted drafts" in s.strip.toolTip() and "one step each" in s.strip.toolTip()


def test_the_strip_follows_the_theme(qtbot) -> None:
    s = sidebar(qtbot)
    s.on_metrics(snap(10, drafted=8, accepted=6))
    assert s.strip.accepted_colour == QColor(LIGHT.kv_green)
    before = s.strip.grab().toImage()
    s.theme = "dark"  # as the window sets it on a theme switch
    assert s.strip.accepted_colour == QColor(DARK.kv_green) and s.strip.own_colour == QColor(DARK.highlight)
    assert s.strip.grab().toImage() != before  # painted again in the new colours


def test_strip_splits_intervals_and_carries_drafts_accepted_ahead(qtbot) -> None:
    strip = DraftStrip()
    qtbot.addWidget(strip)
    strip.add_snapshot(snap(10, drafted=16, accepted=12))  # 12 accepted, 10 written yet
    strip.add_snapshot(snap(10, drafted=16, accepted=12))  # no token: no column
    strip.add_snapshot(snap(15, drafted=16, accepted=12))
    assert list(strip.columns) == [(10, 0), (2, 3)]
    for n in range(16, 16 + 2 * DraftStrip.MAX_COLUMNS):
        strip.add_snapshot(snap(n, drafted=16, accepted=12))
    assert len(strip.columns) == DraftStrip.MAX_COLUMNS and strip.columns[-1] == (0, 1)
    strip.resize(260, 70)
    assert not strip.grab().isNull()
