"""The answer in flight in the window: its row, its turn, and the engine worker's events about it.

`AnswerRelay` starts an answer, moves its streamed text from the worker into its transcript row on
a 30 ms timer (O(new text) a flush), and relays the worker's events tagged with its id (and only
those) to the transcript, the sidebar and the history (`AnswerStore`). A tool call is a row of its
own before the answer that streams after it. When the answer ends, the sources it cites (its turn's
`sources`, read from its words by `cite` where documents set it) go to its row and, with it, to the
history.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, QTimer, Signal

from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone
from prefill.engine.message import ToolCall
from prefill.session.conversation import Conversation, Turn
from prefill.session.document_chats import ChatDocs, Retrieved
from prefill.session.tool_loop import Decision, LoopFinished, ToolCallDone, ToolCallStarted
from prefill.session.turn import Source
from prefill.store.app_settings import Settings
from prefill.ui.chat.answer_store import AnswerStore, answer_figures, call_figures, done_figures
from prefill.ui.chat.sidebar.sidebar import EngineSidebar
from prefill.ui.chat.sidebar.sidebar_plot import CURVE_KEY
from prefill.ui.chat.sources.cited import SOURCES_KEY, sources_figure, stored_sources
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.workers.engine_worker import EngineWorker

FLUSH_MS = 30


@dataclass
class Answering:
    """The answer in flight: the service's Turn (its request, answer so far, calls and state), and
    where the window shows it (where it is stored: `AnswerStore.answer`).

    Attributes:
        id: Tags the engine worker's events for this answer.
        turn: The conversation service's turn.
        row: The answer's transcript row (it moves down as tool rows go in before it).
        budget: The thinking budget it is answered with (None: no limit).
        tool_rows: A running call's id: its transcript row.
        asked: The serial of the tool question shown now (0: none).
        retrieved: What the chat's documents did for its question (None: the chat has none).
    """

    id: int
    turn: Turn
    row: int
    budget: int | None
    tool_rows: dict[str, int] = field(default_factory=dict)
    asked: int = 0
    retrieved: Retrieved | None = None


class AnswerRelay(QObject):
    """Holds the answer in flight (`answering`, None: none) and relays the worker's events for it.

    `cite` (None: nothing to cite) reads the sources an answer's words cite when it ends, as the
    conversation service's `Conversation.cite` does (documents attached to the chat set it:
    `ChatDocuments.cite`); without it, a turn's `sources` stand as whoever answered set them.

    Signals:
        started(): an answer began.
        notice(str): something the person should read (overflow, errors, the tool loop's end); "" clears it.
        tool_asked(object): the model wants to run this ToolCall: ask the person (`answer_tool`).
        tool_settled(): the question is no longer asked (answered, or Stop): hide it.
        ended(): the answer is over (finished or failed); `answering` is None again.
        finished(object): the Finished event of an answer that ended (after `ended`).
    """

    started = Signal()
    notice = Signal(str)
    tool_asked = Signal(object)
    tool_settled = Signal()
    ended = Signal()
    finished = Signal(object)

    def __init__(self, worker: EngineWorker, model: TranscriptModel, sidebar: EngineSidebar, answers: AnswerStore,
                 settings: Callable[[], Settings], parent: QObject | None = None):
        super().__init__(parent)
        self._worker, self._model, self._sidebar, self._answers = worker, model, sidebar, answers
        self._settings = settings
        self._ids = itertools.count(1)
        self.answering: Answering | None = None
        self.cite: Callable[[str], Sequence[Source]] | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(FLUSH_MS)
        self._timer.timeout.connect(self.flush)
        worker.prefill_done.connect(self._on_worker_prefill_done)
        worker.metrics.connect(self._on_worker_metrics)
        worker.finished.connect(self._on_worker_finished)
        worker.failed.connect(self._on_worker_failed)
        worker.tool_asked.connect(self._on_worker_tool_asked)
        worker.tool_started.connect(self._on_worker_tool_started)
        worker.tool_done.connect(self._on_worker_tool_done)
        worker.tool_loop_finished.connect(self._on_worker_tool_loop_finished)
        worker.retrieved.connect(self._on_worker_retrieved)

    def start(self, turn: Turn, budget: int | None, version_of: Row | None = None,
              documents: tuple[Conversation, ChatDocs, int | None] | None = None) -> None:
        """Answer `turn` in a new last row; `version_of`: a stored answer gets a new version (Regenerate);
        `documents`: the chat as it stands, what it reads and its id: its question is asked through them."""
        answer = Row("assistant", [], streaming=True)
        if version_of is not None:
            answer.message_id, answer.position = version_of.message_id, version_of.position
            answer.version, answer.versions = version_of.versions, version_of.versions + 1
        row = self._model.append_row(answer)
        t = self.answering = Answering(next(self._ids), turn, row, budget)
        self.started.emit()
        self.notice.emit("")
        if version_of is None:
            self._answers.begin(then=lambda answer_id: self._model.set_message_id(row, answer_id))
        else:
            self._answers.begin(regenerating=version_of.message_id, shown=version_of.version)
        self._sidebar.set_budget(budget)
        self._sidebar.begin_answer(documents is not None)
        if documents is not None:
            self._worker.generate_with_documents(t.id, *documents)
        else:
            self._worker.generate(t.id, turn.request)
        self._timer.start()

    def answer_tool(self, decision: Decision) -> None:
        """The person's answer to the tool call asked about (`tool_asked`)."""
        t = self.answering
        if t is not None and t.asked:
            self._worker.answer_tool(t.asked, decision)
            self.settle_question()

    def settle_question(self) -> None:
        """The tool question shown, if any, is no longer asked."""
        t = self.answering
        if t is not None and t.asked:
            t.asked = 0
            self.tool_settled.emit()

    def flush(self) -> None:
        """Move streamed text from the worker's buffer to the answer's row: O(new text)."""
        thinking, text = self._worker.take_streamed()
        t = self.answering
        if t is None:
            return
        t.turn.grow(thinking, text)
        self._model.append_reasoning(t.row, thinking)
        self._model.append_text(t.row, text)
        self._answers.answer_grew(t.turn)

    def _current(self, request: int) -> Answering | None:
        """The answer in flight, if the worker's event `request` is about it."""
        t = self.answering
        return t if t is not None and t.id == request else None

    def _on_worker_prefill_done(self, request: int, p: PrefillDone) -> None:
        if self._current(request) is None:
            return
        self._sidebar.on_prefill(p)
        if p.overflow_note:
            policy = self._settings().model.overflow_policy.replace("_", " ")
            self.notice.emit(f"{p.overflow_note} ({policy}).")

    def _on_worker_metrics(self, request: int, m: MetricsSnapshot) -> None:
        t = self._current(request)
        if t is not None:
            self._sidebar.on_metrics(m)
            if 0 <= t.row < self._model.rowCount() and m.reasoning_tokens:
                self._model.update_row(t.row, figures=m.as_dict())  # the thinking's live count

    def _on_worker_finished(self, request: int, f: Finished) -> None:
        t = self._current(request)
        if t is None:
            return
        self.flush()
        self._timer.stop()
        t.turn.finish(f)
        if self.cite is not None:
            t.turn.sources = tuple(self.cite(t.turn.text))
        figures = answer_figures(t.turn)
        if t.retrieved is not None:
            t.turn.sources = t.retrieved.cite(f.text)  # only marks that point at a source given
            if t.retrieved.retrieval is not None:
                figures["retrieval"] = t.retrieved.retrieval.as_dict()
        self._sidebar.on_finished(f)
        if figures:  # the writing speed's curve, drawn again when the chat is opened again
            figures[CURVE_KEY] = self._sidebar.plot.curve()
        # As the history keeps them (a long passage: its part the answer relied on), so a reopened chat shows the same.
        kept = sources_figure(t.turn.sources, t.turn.text)
        self._model.update_row(t.row, content=f.text, reasoning=f.reasoning, streaming=False,
                               figures=figures, finish_reason=f.reason, sources=stored_sources(kept))
        # with its calls (the tool rows of a reopened chat come from them), what retrieval did, the curve and
        # the sources as just worked out (matching each passage's words is not done twice)
        extra = {k: figures[k] for k in ("retrieval", CURVE_KEY) if k in figures}
        self._answers.answer_finished(t.turn, {**extra, SOURCES_KEY: kept} if kept else extra)
        self._end()
        if f.error:
            self.notice.emit(f.error)
        self.finished.emit(f)

    def _on_worker_failed(self, request: int, message: str) -> None:
        t = self._current(request)
        if t is None:
            return
        self._timer.stop()
        self._worker.take_streamed()
        t.turn.fail(message)
        a = self._answers.answer
        # A new answer that failed leaves the history; a new version gives way to the one shown before,
        # which comes back in its row with its tool rows (AnswerStore's `restored`).
        self._answers.answer_finished(t.turn)
        if a is not None and a.regenerated is not None:
            if 0 <= t.row < self._model.rowCount():
                self._model.update_row(t.row, streaming=False)
            self.notice.emit(f"{message} The answer before it is kept.")
        else:
            if 0 <= t.row < self._model.rowCount():
                self._model.remove_row(t.row)
            # The question stays: it can be sent again as it is (Retry) or edited.
            self.notice.emit(f"{message} Your message is kept: retry it, or edit it.")
        self._end()

    def _end(self) -> None:
        self.settle_question()
        self.answering = None
        self.ended.emit()

    # --- tool calls: each one a row before the answer that streams after it -----------------------
    def _on_worker_tool_asked(self, request: int, serial: int, call: ToolCall) -> None:
        t = self._current(request)
        if t is None:
            return
        t.asked = serial
        t.turn.state = "tools"
        self.flush()
        self.tool_asked.emit(call)

    def _on_worker_tool_started(self, request: int, ev: ToolCallStarted) -> None:
        t = self._current(request)
        if t is None:
            return
        self.settle_question()
        t.turn.take(ev)
        t.tool_rows[ev.call.id] = self._insert_tool_row(t, Row("tool", [], call_figures(ev.call), streaming=True))

    def _on_worker_tool_done(self, request: int, ev: ToolCallDone) -> None:
        t = self._current(request)
        if t is None:
            return
        self.settle_question()
        t.turn.take(ev)
        figures = done_figures(ev)
        row = t.tool_rows.pop(ev.call.id, -1)
        if row >= 0:
            self._model.update_row(row, content=ev.text, streaming=False, figures=figures)
        else:
            self._insert_tool_row(t, Row("tool", [ev.text], figures))

    def _insert_tool_row(self, t: Answering, row: Row) -> int:
        at = t.row
        self.flush()
        self._model.insert_row(at, row)
        t.row = at + 1  # the answer moved down one
        return at

    def _on_worker_retrieved(self, request: int, retrieved: Retrieved) -> None:
        t = self._current(request)
        if t is None:
            return
        t.retrieved = retrieved
        t.turn.request = retrieved.request  # what the model was asked, the documents in it
        if retrieved.retrieval is not None:
            self._sidebar.on_retrieval(retrieved.retrieval)

    def _on_worker_tool_loop_finished(self, request: int, end: LoopFinished) -> None:
        if self._current(request) is not None:
            self.settle_question()
            if end.note:
                self.notice.emit(f"Tools: {end.note}.")
