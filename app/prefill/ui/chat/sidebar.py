"""The engine sidebar: prompt, KV cache, TTFT, prefill and decode speed, latency, backend, speculation. Live."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QLabel,
    QProgressBar,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone
from prefill.session.loaded import LoadedModel
from prefill.session.tool_loop import RoundTiming
from prefill.ui.chat.draft_strip import DraftStrip
from prefill.ui.chat.finish_words import finish_words
from prefill.ui.shared.plain_text import plain_label, tooltip
from prefill.ui.shared.theme import kv_bar_style

MIB = 1024 * 1024
# What each speculation figure means, for someone who has never heard of it.
SPECULATION_TIPS = {
    "spec-drafts": "Speculative decoding guesses a few tokens ahead and has the model check the guesses "
                   "all at once.\nDrafted: tokens guessed so far. Accepted: the guesses the model agreed "
                   "with, which it then did not have to work out one by one. The percentage is how often "
                   "the guesses were right.",
    "spec-step": "How many tokens each step of the model wrote on average. Without speculation it is "
                 "exactly 1; at 2.0 the answer took half as many model steps.",
    "spec-rate": "How fast this answer is written with speculation, and how that compares with this "
                 "model's last answer written without it (a different answer, so a rough guide). The "
                 "answer's text is the same either way: speculation changes only the speed.",
}


class RatePlot(QWidget):
    """Decode tokens/s over the current answer, one point per metrics snapshot."""

    MAX_POINTS = 240

    def __init__(self) -> None:
        super().__init__()
        self.points: list[float] = []
        self.setMinimumHeight(70)
        self._last: tuple[float, int] | None = None  # (time_ms, completion_tokens) of the last snapshot

    def reset(self) -> None:
        self.points, self._last = [], None
        self.update()

    def add_snapshot(self, m: MetricsSnapshot) -> None:
        t = m.ttft_ms + (m.completion_tokens - 1) / m.decode_tps * 1000 if m.decode_tps else m.ttft_ms
        if self._last is not None and t > self._last[0] and m.completion_tokens > self._last[1]:
            self.points.append((m.completion_tokens - self._last[1]) / (t - self._last[0]) * 1000)
            self.points = self.points[-self.MAX_POINTS :]
            self.update()
        self._last = (t, m.completion_tokens)

    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = self.rect().adjusted(2, 2, -2, -2)
        p.setPen(QPen(self.palette().mid().color(), 1))
        p.drawRect(r)
        if len(self.points) < 2:
            p.drawText(r, Qt.AlignmentFlag.AlignCenter, "tokens/s")
            return
        top = max(self.points) * 1.1 or 1.0
        step = r.width() / (len(self.points) - 1)
        poly = QPolygonF([QPointF(r.left() + i * step, r.bottom() - v / top * r.height())
                          for i, v in enumerate(self.points)])
        p.setPen(QPen(QColor("#3b82f6"), 2))
        p.drawPolyline(poly)
        p.setPen(self.palette().text().color())
        corner = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        p.drawText(r.adjusted(4, 2, 0, 0), corner, f"{top / 1.1:.0f} tok/s")


class EngineSidebar(QWidget):
    """Shows the engine's figures; between answers, the last answer's figures and the KV fill."""

    def __init__(self, theme: str = "light") -> None:
        super().__init__()
        self._theme = theme
        self.labels: dict[str, QLabel] = {}
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 8, 8, 8)

        model_box = QGroupBox("Model")
        mf = QFormLayout(model_box)
        self._add(mf, "model", "Model", "none loaded")
        self._add(mf, "backend", "Backend", "—")
        self._add(mf, "format", "Chat format", "—")
        self.labels["format"].setWordWrap(True)
        self.warning = plain_label()
        self.warning.setObjectName("backend-warning")
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet("color: #b45309; font-weight: 600;")
        self.warning.hide()
        mf.addRow(self.warning)
        self.load_bar = QProgressBar()
        self.load_bar.setRange(0, 100)
        self.load_bar.hide()
        mf.addRow(self.load_bar)
        lay.addWidget(model_box)

        prompt_box = QGroupBox("Prompt")
        pf = QFormLayout(prompt_box)
        self._add(pf, "prompt", "Length", "—")
        self._add(pf, "reused", "Reused from cache", "—")
        self._add(pf, "evaluated", "Evaluated", "—")
        self._add(pf, "restored", "Disk cache", "—")
        self._add(pf, "images", "Images", "—")  # apart from text prefill: the vision encoder's own time
        self.cache_note = plain_label()
        self.cache_note.setObjectName("cache-note")
        self.cache_note.setWordWrap(True)
        self.cache_note.hide()
        pf.addRow(self.cache_note)
        lay.addWidget(prompt_box)

        kv_box = QGroupBox("KV cache")
        kl = QVBoxLayout(kv_box)
        self.kv_bar = QProgressBar()
        self.kv_bar.setObjectName("kv-bar")
        self.kv_bar.setRange(0, 1000)
        self.kv_bar.setTextVisible(False)
        self.kv_bar.setStyleSheet(kv_bar_style(0.0, theme))
        kl.addWidget(self.kv_bar)
        self.labels["kv"] = plain_label("—")
        self.labels["kv"].setObjectName("stat-kv")
        kl.addWidget(self.labels["kv"])
        lay.addWidget(kv_box)

        speed_box = QGroupBox("Speed")
        sf = QFormLayout(speed_box)
        self._add(sf, "ttft", "Time to first token", "—")
        self._add(sf, "ttfa", "To first answer token", "—")
        self._add(sf, "prefill", "Prefill", "—")
        self._add(sf, "decode", "Decode", "—")
        self._add(sf, "itl", "Inter-token p50 / p95", "—")
        self._add(sf, "tokens", "Answer", "—")
        self._add(sf, "tools", "Tool rounds", "—")
        self.labels["tools"].setWordWrap(True)
        self.plot = RatePlot()
        sf.addRow(self.plot)
        lay.addWidget(speed_box)

        # Shown while an answer's drafts run, and kept after it until the next answer.
        self.speculation_box = QGroupBox("Speculation")
        self.speculation_box.setObjectName("speculation-box")
        spf = QFormLayout(self.speculation_box)
        self._add(spf, "spec-drafts", "Drafted / accepted", "—")
        self._add(spf, "spec-step", "Tokens per step", "—")
        self._add(spf, "spec-rate", "Decode", "—")
        self.labels["spec-rate"].setWordWrap(True)
        for key, tip in SPECULATION_TIPS.items():
            self.labels[key].setToolTip(tooltip(tip))
            title = spf.labelForField(self.labels[key])
            if title is not None:
                title.setToolTip(tooltip(tip))
        self.strip = DraftStrip(theme)
        spf.addRow(self.strip)
        self.speculation_box.hide()
        lay.addWidget(self.speculation_box)
        lay.addStretch(1)
        self.last: MetricsSnapshot | None = None
        self.remote = False  # a remote endpoint answers: what it does not report is unknown
        self._model = ""  # the model answering, by name: plain decode rates are its own
        self.plain_tps: dict[str, float] = {}  # per model: its last answer's decode rate without speculation

    @property
    def theme(self) -> str:
        return self._theme

    @theme.setter
    def theme(self, effective: str) -> None:
        """Light or dark: what is painted here by hand follows (the strip at once)."""
        self._theme = effective
        self.strip.set_theme(effective)
        self.kv_bar.setStyleSheet(kv_bar_style(self.kv_bar.value() / 1000, effective))  # its track too

    def _add(self, form: QFormLayout, key: str, title: str, value: str) -> None:
        label = plain_label(value)
        label.setObjectName(f"stat-{key}")
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(plain_label(title), label)
        self.labels[key] = label

    def text(self, key: str) -> str:
        return self.labels[key].text()

    # --- the model -----------------------------------------------------------------------
    def set_loading(self, name: str) -> None:
        self.labels["model"].setText(f"{name} (loading…)")
        self.load_bar.setValue(0)
        self.load_bar.show()

    def set_load_progress(self, p: float) -> None:
        self.load_bar.setValue(int(p * 100))

    def set_model(self, m: LoadedModel | None, error: str = "") -> None:
        self.load_bar.hide()
        self.remote = m is not None and bool(m.remote)
        self._model = "" if m is None else f"{m.remote}|{m.path}|{m.name}"
        if m is None:
            self.labels["model"].setText("none loaded" if not error else "failed to load")
            self.labels["backend"].setText("—")
            self.labels["format"].setText("—")
            self.warning.setText(error)
            self.warning.setVisible(bool(error))
            return
        if m.remote:
            self.labels["model"].setText(f"{m.name} · at {m.remote} · answered in {m.load_ms:.0f} ms")
            self.set_kv(MetricsSnapshot())
        else:
            self.labels["model"].setText(f"{m.name} · {m.model_bytes / MIB:.0f} MiB · loaded in {m.load_ms:.0f} ms")
        self.labels["backend"].setText(m.backend_summary)
        self.labels["format"].setText("the model's own template" if m.format_from_model else m.chat_format_label)
        self.warning.setText(f"⚠ {m.backend_warning}" if m.backend_warning else "")
        self.warning.setVisible(bool(m.backend_warning))

    # --- an answer ------------------------------------------------------------------------
    def begin_answer(self) -> None:
        self.plot.reset()
        for key in ("ttft", "ttfa", "prefill", "decode", "itl", "tokens", "prompt", "reused", "evaluated", "restored",
                    "images"):
            self.labels[key].setText("…")
        self.labels["tools"].setText("—")
        self.cache_note.hide()
        self.strip.reset()
        self.speculation_box.hide()

    def on_prefill(self, p: PrefillDone) -> None:
        if self.remote and not p.prompt_tokens:  # a remote reports its prompt in `usage`, at the end
            for key in ("prompt", "reused", "evaluated"):
                self.labels[key].setText("not reported yet")
        else:
            self.labels["prompt"].setText(f"{p.prompt_tokens} tokens")
            self.labels["reused"].setText(f"{p.cached_tokens}")
            self.labels["evaluated"].setText(f"{p.evaluated_tokens}")
        self.labels["restored"].setText(f"restored {p.restored_tokens:,} tokens from disk in {p.restore_ms:.0f} ms"
                                        if p.restored_tokens else "—")
        self.labels["images"].setText(f"{p.image_tokens} tokens · encoded in {p.image_encode_ms:.0f} ms"
                                      if p.image_tokens else "—")
        tps = p.evaluated_tokens / p.prefill_ms * 1000 if p.prefill_ms else 0.0
        self.labels["prefill"].setText(f"{tps:.0f} tok/s ({p.prefill_ms:.0f} ms)")
        self.cache_note.setText(p.cache_note)
        self.cache_note.setVisible(bool(p.cache_note))

    def on_metrics(self, m: MetricsSnapshot) -> None:
        self.last = m
        self.labels["ttft"].setText(f"{m.ttft_ms:.0f} ms (prefill {m.prefill_ms:.0f} ms)")
        self.labels["prefill"].setText(f"{m.prefill_tps:.0f} tok/s ({m.prefill_ms:.0f} ms)")
        self.labels["decode"].setText(f"{m.decode_tps:.1f} tok/s")
        self.labels["itl"].setText(f"{m.itl_p50_ms:.1f} / {m.itl_p95_ms:.1f} ms")
        split = (f" ({m.reasoning_tokens} thinking · {m.completion_tokens - m.reasoning_tokens} answer)"
                 if m.reasoning_tokens else "")
        self.labels["tokens"].setText(
            f"{m.completion_tokens} tokens{split}" + (f" · {finish_words(m.finish_reason)}" if m.finish_reason else ""))
        self.labels["ttfa"].setText(f"{m.answer_ttft_ms:.0f} ms" if m.answer_ttft_ms else "—")
        if m.prompt_tokens:
            self.labels["prompt"].setText(f"{m.prompt_tokens} tokens")
            self.labels["reused"].setText(f"{m.cached_tokens}")
            self.labels["evaluated"].setText(f"{m.evaluated_tokens}")
        self.plot.add_snapshot(m)
        if m.draft_n:
            self._on_drafts(m)
        self.set_kv(m)

    def _on_drafts(self, m: MetricsSnapshot) -> None:
        """The speculation figures of a snapshot whose drafts ran: a few labels and one strip column."""
        accepted, n = m.draft_n_accepted, m.completion_tokens
        self.labels["spec-drafts"].setText(f"{m.draft_n} / {accepted} · {accepted / m.draft_n:.0%} accepted")
        self.labels["spec-step"].setText(f"{n / max(1, n - accepted):.2f}")
        plain = self.plain_tps.get(self._model)
        self.labels["spec-rate"].setText(f"{m.decode_tps:.0f} tok/s · {m.decode_tps / plain:.2f}× plain" if plain
                                         else f"{m.decode_tps:.0f} tok/s · no answer without it yet to compare")
        self.strip.add_snapshot(m)
        self.speculation_box.show()

    def on_finished(self, f: Finished) -> None:
        self.on_metrics(f.metrics)
        if not f.metrics.draft_n and f.metrics.decode_tps > 0 and not self.remote:
            self.plain_tps[self._model] = f.metrics.decode_tps  # what the next speculative answer compares with
        if self.remote and not f.metrics.prompt_tokens:  # a server that sends no `usage`
            for key in ("prompt", "reused", "evaluated"):
                self.labels[key].setText("not reported by the server")

    def on_tool_rounds(self, rounds: Sequence[RoundTiming], tool_rounds: int) -> None:
        """Where a turn with tool calls spent its time: the model, the tools, waiting on the person and
        Prefill itself between rounds, and each later round's prompt (the results) evaluated apart.
        `tool_rounds`: the rounds whose calls were answered (run or denied), as the loop counts them."""
        if not rounds:
            self.labels["tools"].setText("—")
            return
        model = sum(r.model_s for r in rounds)
        tools = sum(r.tools_s for r in rounds)
        asked = sum(r.approval_s for r in rounds)
        overheads = [r.overhead_s for r in rounds if r.overhead_s is not None]
        plural = "s" if tool_rounds != 1 else ""
        lines = [f"{tool_rounds} tool round{plural} · model {model:.2f} s · tools {tools:.2f} s"
                 + (f" · you {asked:.1f} s" if asked >= 0.05 else "")]
        if overheads:
            lines.append(f"Prefill between rounds: {max(overheads) * 1000:.2f} ms at most")
        results = [f"{r.evaluated_tokens} of {r.prompt_tokens}" for r in rounds[1:] if r.prompt_tokens]
        if results:
            lines.append("results prefilled: " + ", ".join(results) + " tokens")
        self.labels["tools"].setText("\n".join(lines))

    def set_kv(self, m: MetricsSnapshot) -> None:
        if not m.kv_known:
            if self.remote:  # not zero: the remote's cache is out of sight
                self.kv_bar.setValue(0)
                self.kv_bar.setStyleSheet(kv_bar_style(0.0, self.theme))
                self.labels["kv"].setText("unknown: the remote server does not report its cache")
            return
        frac = m.kv_used / m.kv_total
        self.kv_bar.setValue(int(frac * 1000))
        self.kv_bar.setStyleSheet(kv_bar_style(frac, self.theme))
        self.labels["kv"].setText(
            f"{m.kv_used:,} / {m.kv_total:,} cells · {m.kv_bytes / MIB:.1f} / {m.kv_bytes_total / MIB:.0f} MiB"
        )
