"""The engine sidebar: prompt, KV cache, TTFT, prefill and decode speed, latency, backend, speculation,
the thinking against its budget. Live, and for the open chat its last answer's stored figures. Plain
words first, the engine's words on hover (``sidebar_words``).

Compact: a headline (the writing speed and the first word, large) over the speed plot, then cards of
figures, each a label and its value on one line; a figure with nothing to say is left out, and the
rarer ones are folded under Details."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractItemModel, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QFrame, QLabel, QProgressBar, QScrollArea, QVBoxLayout, QWidget

from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone
from prefill.engine.units import format_bytes
from prefill.session.documents import Retrieval
from prefill.session.loaded import LoadedModel
from prefill.session.residents import ResidentModels
from prefill.session.tool_loop import LoopFinished, RoundTiming
from prefill.ui.chat.sidebar.draft_strip import DraftStrip
from prefill.ui.chat.sidebar.sidebar_parts import Disclosure, FigureCard, Headline
from prefill.ui.chat.sidebar.sidebar_plot import CURVE_KEY, RatePlot
from prefill.ui.chat.sidebar.sidebar_words import FIGURES, GROUPS
from prefill.ui.chat.transcript.finish_words import finish_words
from prefill.ui.chat.transcript.transcript_model import Roles
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.theme import kv_bar_style
from prefill.ui.widgets.tokens import COLUMN, SPACE

MIB = 1024 * 1024
SPECULATION_KEYS = ("spec-drafts", "spec-step", "spec-rate", "spec-exact")
DOCUMENT_KEYS = ("docs-how", "docs-tokens", "docs-embed", "docs-search")
SPECULATION_TIPS = {key: FIGURES[key].tip for key in SPECULATION_KEYS}
ANSWER_KEYS = ("ttft", "ttfa", "prefill", "decode", "itl", "tokens", "prompt", "reused", "evaluated", "restored",
               "images", "tools")
WAITING_KEYS = ("ttft", "decode", "tokens", "prefill", "prompt")  # "…" while an answer is coming
NO_ANSWER = "No answer yet."


def last_answer_figures(transcript: QAbstractItemModel) -> dict[str, Any]:
    """The figures stored with the last finished answer of a transcript ({} when none has any)."""
    for row in range(transcript.rowCount() - 1, -1, -1):
        index = transcript.index(row, 0)
        if transcript.data(index, Roles.ROLE) == "assistant" and not transcript.data(index, Roles.STREAMING):
            figures = transcript.data(index, Roles.FIGURES)
            if figures:
                return dict(figures)
    return {}


def stored_snapshot(figures: Mapping[str, Any]) -> MetricsSnapshot:
    """A snapshot from an answer's stored figures; a value of the wrong type or not finite is left out
    (the history may have been imported from anywhere)."""
    fields = MetricsSnapshot.__dataclass_fields__
    values: dict[str, Any] = {}
    for key, value in figures.items():
        default = getattr(MetricsSnapshot, key, None) if key in fields else None
        if default is None or isinstance(value, bool):
            continue
        if isinstance(default, float) and isinstance(value, int | float) and math.isfinite(value):
            values[key] = float(value)
        elif isinstance(default, int | str) and type(value) is type(default):
            values[key] = value
    return MetricsSnapshot(**values)


def stored_budget(figures: Mapping[str, Any]) -> int | None:
    """The thinking budget kept with an answer's figures (None: none held, or not a number of tokens)."""
    budget = figures.get("reasoning_budget")
    return budget if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 0 else None


def stored_retrieval(d: Any) -> Retrieval | None:
    """What retrieval did, as an answer's figures keep it (checked: the history may come from anywhere)."""
    if not isinstance(d, Mapping) or d.get("mode") not in ("whole", "retrieved"):
        return None

    def number(key: str) -> float:
        v = d.get(key)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else 0.0

    skipped = d.get("skipped")
    return Retrieval(d["mode"], int(number("documents")), int(number("passages")), int(number("tokens")),
                     int(number("budget")), number("embed_ms"), number("search_ms"),
                     tuple(s for s in skipped if isinstance(s, str)) if isinstance(skipped, list) else ())


def exactness(drift: float) -> str:
    """Whether a speculative answer is the plain one word for word, from the model's measured drift."""
    if drift < 0:
        return "not measured yet"
    if drift == 0:
        return "yes (measured: batches match exactly)"
    return f"nearly: batches differ by up to {drift:.2f}"


class EngineSidebar(QWidget):
    """Shows the engine's figures; between answers, the last answer's figures and the KV fill."""

    def __init__(self, theme: str = "light") -> None:
        super().__init__()
        self._theme = theme
        self.labels: dict[str, QLabel] = {}
        self._cards: dict[str, FigureCard] = {}  # the card each figure's row is in
        # The figures scroll in a short window rather than being squeezed or cut off.
        self.scroller = QScrollArea()
        self.scroller.setObjectName("sidebar-scroll")
        self.scroller.setWidgetResizable(True)
        self.scroller.setFrameShape(QFrame.Shape.NoFrame)
        self.scroller.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        content = QWidget()
        content.setObjectName("sidebar-content")
        self.scroller.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.scroller)
        lay = QVBoxLayout(content)
        lay.setContentsMargins(SPACE.sm, SPACE.sm, SPACE.sm, SPACE.sm)
        lay.setSpacing(SPACE.sm)

        # The headline: how fast the last answer was written and how long its first word took, over the plot.
        self.headline = Headline()
        self.headline.setToolTip(tooltip(GROUPS["speed"].tip))
        self.labels["decode"], self.labels["ttft"] = self.headline.speed, self.headline.first_word
        self.plot = RatePlot()
        self.plot.setObjectName("rate-plot")
        self.plot.setToolTip(tooltip(FIGURES["plot"].tip))
        self.plot.set_theme(theme)
        self.headline.body.addWidget(self.plot)
        lay.addWidget(self.headline)

        self.answer_card = self._card("answer", ("tokens", "prefill", "ttfa", "prompt", "reused", "tools"),
                                      auto_hide=True)  # no answer: no empty card
        self.cache_note = self.answer_card.note("cache-note")
        lay.addWidget(self.answer_card)

        self.kv_card = FigureCard(GROUPS["kv"])
        self.kv_bar = QProgressBar()
        self.kv_bar.setObjectName("kv-bar")
        self.kv_bar.setRange(0, 1000)
        self.kv_bar.setTextVisible(False)
        self.kv_bar.setStyleSheet(kv_bar_style(0.0, theme))
        self.kv_card.row(self.kv_bar)
        self.labels["kv"] = plain_label("")
        self.labels["kv"].setObjectName("stat-kv")
        self.labels["kv"].setWordWrap(True)
        self.labels["kv"].setToolTip(tooltip(FIGURES["kv"].tip))
        self.kv_bar.setToolTip(tooltip(FIGURES["kv"].tip))
        self.kv_card.row(self.labels["kv"])
        self.kv_card.hide()  # until the engine reports its cache (or that it cannot)
        lay.addWidget(self.kv_card)

        self.model_card = self._card("model", ("model", "backend", "context", "memory"))
        self.model_card.set(self.labels["model"], "none loaded")
        self.warning = self.model_card.note("backend-warning")
        self.load_bar = QProgressBar()
        self.load_bar.setRange(0, 100)
        self.load_bar.hide()
        self.model_card.row(self.load_bar)
        lay.addWidget(self.model_card)

        # Shown for a chat with documents: what they did for its last question, apart from the prefill.
        self.documents_box = self._card("documents", DOCUMENT_KEYS)
        self.documents_box.setObjectName("documents-box")
        self.documents_note = self.documents_box.note("documents-note")
        self.documents_box.hide()
        lay.addWidget(self.documents_box)

        # Shown while an answer's drafts run, and kept after it until the next answer.
        self.speculation_box = self._card("speculation", SPECULATION_KEYS)
        self.speculation_box.setObjectName("speculation-box")
        self.strip = DraftStrip(theme)
        self.speculation_box.row(self.strip)
        self.speculation_box.hide()
        lay.addWidget(self.speculation_box)

        # The rarer figures, folded.
        self.details_toggle = Disclosure(GROUPS["details"])
        lay.addWidget(self.details_toggle)
        self.details = self._card("", ("itl", "evaluated", "restored", "images", "format", "vision"))
        self.details.hide()
        self.details_toggle.toggled.connect(self.details.setVisible)
        lay.addWidget(self.details)
        lay.addStretch(1)
        self.last: MetricsSnapshot | None = None
        self.remote = False  # a remote endpoint answers: what it does not report is unknown
        self.reasons = False  # the model answering thinks apart (a thinking budget means something to it)
        self.budget: int | None = None  # the thinking budget of the answer shown (None: no limit)
        self._model = ""  # the model answering, by name: plain decode rates are its own
        self.plain_tps: dict[str, float] = {}  # per model: its last answer's decode rate without speculation
        self._waiting = False  # an answer is coming: its figures say "…" until they come or it is refused
        self._clear("")

    @property
    def theme(self) -> str:
        return self._theme

    @theme.setter
    def theme(self, effective: str) -> None:
        """Light or dark: what is painted here by hand follows (the strip and the plot at once)."""
        self._theme = effective
        self.strip.set_theme(effective)
        self.plot.set_theme(effective)
        self.kv_bar.setStyleSheet(kv_bar_style(self.kv_bar.value() / 1000, effective))  # its track too

    def resizeEvent(self, event: QResizeEvent) -> None:
        # Squeezed (a small window with every panel open): the figures stack rather than being cut off.
        narrow = event.size().width() < COLUMN.side_min_width
        for card in self.findChildren(FigureCard):
            card.set_narrow(narrow)
        self._fit_headline(event.size().width())
        super().resizeEvent(event)

    def _fit_headline(self, width: int) -> None:
        """The first word beside the writing speed where both fit the sidebar's width, else under it."""
        room = width - self.scroller.verticalScrollBar().sizeHint().width() - 2 * SPACE.sm
        self.headline.set_narrow(room < self.headline.side_by_side_width())

    def _card(self, group: str, keys: tuple[str, ...], auto_hide: bool = False) -> FigureCard:
        card = FigureCard(GROUPS[group] if group else None, auto_hide)
        for key in keys:
            self.labels[key] = card.figure(key)
            self._cards[key] = card
        return card

    def _set(self, key: str, text: str) -> None:
        """A figure's value; "" leaves its row out (the headline's: its figure)."""
        card = self._cards.get(key)
        if card is not None:
            card.set(self.labels[key], text)
        else:
            self.labels[key].setText(text)
            if key in ("decode", "ttft"):
                self.headline.show_figures()
                self._fit_headline(self.width())

    def text(self, key: str) -> str:
        return self.labels[key].text()

    def shows(self, key: str) -> bool:
        """Whether the figure `key` is in the sidebar now (folded under Details counts): it has a value."""
        return bool(self.labels[key].text())

    # --- the model -----------------------------------------------------------------------
    def set_loading(self, name: str) -> None:
        self._set("model", f"{name} (loading…)")
        self.load_bar.setValue(0)
        self.load_bar.show()

    def set_load_progress(self, p: float) -> None:
        self.load_bar.setValue(int(p * 100))

    def set_model(self, m: LoadedModel | None, error: str = "", name: str = "") -> None:
        """The model answering now; `name` as a person reads it (the window names it, from its file and
        repository: hub/model_names), else its own."""
        self.load_bar.hide()
        self.remote = m is not None and bool(m.remote)
        self.reasons = m is not None and m.reasons
        self._model = "" if m is None else f"{m.remote}|{m.path}|{m.name}"
        if m is None:
            self._set("model", "none loaded" if not error else "failed to load")
            for key in ("backend", "format", "vision", "context"):
                self._set(key, "")
            self.model_card.set(self.warning, error)
            return
        name = name or m.name
        if m.remote:
            self._set("model", f"{name} · at {m.remote} · answered in {m.load_ms:.0f} ms")
            self.labels["model"].setToolTip(tooltip(f"The model as the server names it: {m.name}"))
            self.set_kv(MetricsSnapshot())
        else:
            how = "already in memory" if m.resident else f"loaded in {m.load_ms:.0f} ms"
            self._set("model", f"{name} · {m.model_bytes / MIB:.0f} MiB · {how}")
            self.labels["model"].setToolTip(tooltip(f"Named inside the file (general.name): {m.name}\n{m.path}"))
        vram = m.device.vram_bytes if m.device is not None else 0
        self._set("backend", m.backend_summary + (f" · {vram / MIB:,.0f} MiB of GPU memory" if vram else ""))
        self._set("context", context_words(m.n_ctx, m.n_ctx_asked))
        self._set("vision", f"yes, read by {Path(m.projector).name}" if m.projector else
                  m.vision or ("not reported by the server" if m.remote else "text only"))
        self._set("format", "the model's own template" if m.format_from_model else m.chat_format_label)
        self.model_card.set(self.warning, f"⚠ {m.backend_warning}" if m.backend_warning else "")

    def set_residents(self, shown: ResidentModels) -> None:
        """The memory line: the local models in memory and what they take against the budget (llama.cpp's
        figures once loaded; each model's tooltip line says which parts are estimates). Fed by the engine
        worker's `residents_changed`, so the GUI thread never asks the model or the disk."""
        self._set("memory", shown.line() if shown.models else "")
        names = "\n".join(f"{m.name}: {format_bytes(m.memory.total)}, {m.memory.how()}"
                          f"{' (pinned)' if m.pinned else ''}{' (in use)' if m.current else ''}" for m in shown.models)
        self.labels["memory"].setToolTip(tooltip(f"{names}\n\n{FIGURES['memory'].tip}" if names
                                                 else FIGURES["memory"].tip))

    # --- an answer ------------------------------------------------------------------------
    def set_budget(self, budget: int | None) -> None:
        """The thinking budget of the answer coming (None: no limit): its thinking is counted against it."""
        self.budget = budget

    def begin_answer(self, documents: bool = False) -> None:
        """An answer is coming; `documents`: its question goes through the chat's documents."""
        self._clear("…")
        self._waiting = True
        if documents:
            for key in DOCUMENT_KEYS:
                self._set(key, "…")
            self.documents_box.show()

    def on_request_failed(self, _request: int, reason: str) -> None:
        """The engine worker's `failed`: connected to this method, not a lambda, so that it runs on the
        GUI thread (a lambda would run on the worker's)."""
        self.on_failed(reason)

    def on_failed(self, reason: str) -> None:
        """The answer coming was refused or failed (a message too long for the context, a server's
        error): its figures go, and the headline says why, instead of "…" for ever."""
        if not self._waiting:
            return
        self._clear("")
        self.headline.set_state(f"Not answered: {reason}")

    def show_answer(self, figures: Mapping[str, Any]) -> None:
        """The open chat's last answer, from its stored figures; none (a new chat): every figure cleared.
        The KV fill is left as the engine reports it: it is the cache's now, not the answer's then."""
        self._clear("")
        self.last = None
        self.budget = stored_budget(figures)
        if figures:
            m = stored_snapshot(figures)
            self._show(m)
            self.plot.show_stored(figures.get(CURVE_KEY), m)  # its kept curve, not its average alone
        stored = stored_retrieval(figures.get("retrieval"))
        if stored is not None:
            self.on_retrieval(stored)

    def on_retrieval(self, r: Retrieval) -> None:
        """What the chat's documents did for the question, apart from the prefill (session/documents.py)."""
        if r.mode == "whole":
            plural = "s" if r.documents != 1 else ""
            self._set("docs-how", f"whole: {r.documents} document{plural}, kept for the next question")
            self._set("docs-embed", "nothing searched")
            self._set("docs-search", "nothing searched")
        else:
            plural = "s" if r.passages != 1 else ""
            self._set("docs-how", f"searched: {r.passages} passage{plural} found for this question")
            self._set("docs-embed", f"{r.embed_ms:.1f} ms")
            self._set("docs-search", f"{r.search_ms:.1f} ms")
        self._set("docs-tokens", f"{r.tokens:,} of {r.budget:,} tokens")
        self.documents_box.set(self.documents_note, "\n".join(f"not read: {s}" for s in r.skipped))
        self.documents_box.show()

    def _clear(self, mark: str) -> None:
        """An answer's figures show `mark` ("…" one is coming) or are left out (""); the plot, the cache
        note, the token strip and the speculation box are emptied."""
        self._waiting = False
        self.plot.reset()
        for key in ANSWER_KEYS:
            self._set(key, mark if key in WAITING_KEYS else "")
        self.headline.set_state("" if mark else NO_ANSWER)
        self.answer_card.set(self.cache_note, "")
        self.strip.reset()
        self.speculation_box.hide()
        self.documents_box.hide()
        self.documents_box.set(self.documents_note, "")

    def on_prefill(self, p: PrefillDone) -> None:
        if self.remote and not p.prompt_tokens:  # a remote reports its prompt in `usage`, at the end
            for key in ("prompt", "reused", "evaluated"):
                self._set(key, "not reported yet")
        else:
            self._set("prompt", f"{p.prompt_tokens} tokens")
            self._set("reused", f"{p.cached_tokens}")
            self._set("evaluated", f"{p.evaluated_tokens}")
        self._set("restored", f"restored {p.restored_tokens:,} tokens from disk in {p.restore_ms:.0f} ms"
                  if p.restored_tokens else "")
        self._set("images", f"{p.image_tokens} tokens · encoded in {p.image_encode_ms:.0f} ms"
                  if p.image_tokens else "")
        tps = p.evaluated_tokens / p.prefill_ms * 1000 if p.prefill_ms else 0.0
        self._set("prefill", f"{tps:.0f} tok/s · {p.prefill_ms:.0f} ms")
        self.answer_card.set(self.cache_note, p.cache_note)

    def on_metrics(self, m: MetricsSnapshot) -> None:
        self._show(m)
        self.plot.add_snapshot(m)
        self.set_kv(m)

    def _show(self, m: MetricsSnapshot) -> None:
        """An answer's figures, live or stored (the KV fill and the plot apart)."""
        self.last = m
        self._waiting = False
        self.headline.set_state("")
        self._set("ttft", f"{m.ttft_ms:.0f} ms")
        self._set("prefill", f"{m.prefill_tps:.0f} tok/s · {m.prefill_ms:.0f} ms" if m.prefill_ms > 0 else "")
        self._set("decode", f"{m.decode_tps:.1f} tok/s")
        self._set("itl", f"{m.itl_p50_ms:.1f} ms · worst 5% {m.itl_p95_ms:.1f} ms" if m.completion_tokens > 1 else "")
        split = self._split(m)
        self._set("tokens",
                  f"{m.completion_tokens} token{'' if m.completion_tokens == 1 else 's'}{split}"
                  + (f" · {finish_words(m.finish_reason)}" if m.finish_reason else ""))
        self._set("ttfa", f"{m.answer_ttft_ms:.0f} ms" if m.answer_ttft_ms and m.reasoning_tokens else "")
        if m.prompt_tokens:
            self._set("prompt", f"{m.prompt_tokens} tokens")
            self._set("reused", f"{m.cached_tokens}")
            self._set("evaluated", f"{m.evaluated_tokens}")
        if m.draft_n:
            self._on_drafts(m)

    def _split(self, m: MetricsSnapshot) -> str:
        """The answer's tokens as thinking and answer, the thinking against its budget where one holds."""
        answer = m.completion_tokens - m.reasoning_tokens
        if self.budget is not None and (self.reasons or m.reasoning_tokens):
            thinking = (f"{m.reasoning_tokens:,} of {self.budget:,} thinking" if m.reasoning_tokens or self.budget
                        else "no thinking: budget 0")
            return f" ({thinking} · {answer} answer)"
        return f" ({m.reasoning_tokens} thinking · {answer} answer)" if m.reasoning_tokens else ""

    def _on_drafts(self, m: MetricsSnapshot) -> None:
        """The speculation figures of a snapshot whose drafts ran: a few labels and one strip column."""
        accepted, n = m.draft_n_accepted, m.completion_tokens
        self._set("spec-drafts", f"{m.draft_n} / {accepted} · {accepted / m.draft_n:.0%} accepted")
        self._set("spec-step", f"{n / max(1, n - accepted):.2f}")
        plain = self.plain_tps.get(self._model)
        self._set("spec-rate", f"{m.decode_tps:.0f} tok/s · {m.decode_tps / plain:.2f}× plain" if plain
                  else f"{m.decode_tps:.0f} tok/s · no answer without it yet to compare")
        self._set("spec-exact", exactness(m.draft_drift))
        self.strip.add_snapshot(m)
        self.speculation_box.show()

    def on_finished(self, f: Finished) -> None:
        self.on_metrics(f.metrics)
        if not f.metrics.draft_n and f.metrics.decode_tps > 0 and not self.remote:
            self.plain_tps[self._model] = f.metrics.decode_tps  # what the next speculative answer compares with
        if self.remote and not f.metrics.prompt_tokens:  # a server that sends no `usage`
            for key in ("prompt", "reused", "evaluated"):
                self._set(key, "not reported by the server")

    def on_tool_loop_finished(self, _request: int, end: LoopFinished) -> None:
        """The engine worker's `tool_loop_finished` (a method, not a lambda: it runs on the GUI thread)."""
        self.on_tool_rounds(end.timings, end.tool_rounds)

    def on_tool_rounds(self, rounds: Sequence[RoundTiming], tool_rounds: int) -> None:
        """Where a turn with tool calls spent its time: the model, the tools, waiting on the person and
        Prefill itself between rounds, and each later round's prompt (the results) evaluated apart.
        `tool_rounds`: the rounds whose calls were answered (run or denied), as the loop counts them."""
        if not rounds:
            self._set("tools", "")
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
        self._set("tools", "\n".join(lines))

    def set_kv(self, m: MetricsSnapshot) -> None:
        if not m.kv_known:
            if self.remote:  # not zero: the remote's cache is out of sight
                self.kv_bar.setValue(0)
                self.kv_bar.setStyleSheet(kv_bar_style(0.0, self.theme))
                self.labels["kv"].setText("unknown: the remote server does not report its cache")
                self.kv_card.show()
            return
        frac = m.kv_used / m.kv_total
        self.kv_card.show()
        self.kv_bar.setValue(int(frac * 1000))
        self.kv_bar.setStyleSheet(kv_bar_style(frac, self.theme))
        self.labels["kv"].setText(
            f"{m.kv_used:,} of {m.kv_total:,} memory cells · {m.kv_bytes / MIB:.1f} of {m.kv_bytes_total / MIB:.0f} MiB"
        )


def context_words(n_ctx: int, asked: int) -> str:
    """The context the model runs at, and the one asked for where llama.cpp rounded it up ("": not known,
    as for a remote model)."""
    if n_ctx <= 0:
        return ""
    if asked and asked != n_ctx:
        return f"{n_ctx:,} tokens (asked for {asked:,}: llama.cpp rounds up)"
    return f"{n_ctx:,} tokens"
