"""The window's chat in the history: the conversation service's `ConversationHooks` over `StoreProxy`.

The answer in flight and the engine worker's events for it are answering.py's; what is written to
the history, and when, is decided here. A question is kept as it is asked (`added`); the answer's
message is made when its turn begins (`begin`: a new version of a stored answer needs none, and the
turns after that answer are kept with the version it had), written every half second while it
streams (`answer_grew`, so a crash loses at most that), and written whole with its figures, tool calls
and sources when it ends (`answer_finished`). An answer that failed leaves no message: a new one is
deleted, a new version gives way to the version shown before it (its turns after it come back). A
compaction's summary is kept as a "system" message holding {"compaction": …} figures (`summary_made`).

Store calls run in order, so a write asked before `begin_answer` came back still finds its message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefill.engine.message import ToolCall
from prefill.session.conversation import Compacted, Item, Said, Turn
from prefill.session.tool_loop import ToolCallDone
from prefill.store import MessageRecord
from prefill.ui.chat.sources.cited import SOURCES_KEY, sources_figure
from prefill.ui.workers.store_worker import OnError, StoreProxy, Then

SAVE_EVERY_S = 0.5
STORED_RESULT_CHARS = 4000  # of each tool result kept with the answer (the figures stay small enough to export)


@dataclass
class StoredAnswer:
    """Where the answer in flight is kept.

    Attributes:
        answer_id: Its message in the history, once the store made it (None: not yet).
        regenerated: While a new version streams, the version shown before it (None: a new answer).
        last_save: When it was last written (time.monotonic).
    """

    answer_id: int | None = None
    regenerated: int | None = None
    last_save: float = field(default_factory=time.monotonic)


class AnswerStore:
    """The window's `ConversationHooks`: each change of the chat shown, written to the history.

    Args:
        store: The store thread's handle.
        conversation_id: The chat shown now (None: none yet; then nothing is written).
        restored: Called with the version shown again when a new version failed (the row shows it).
        clock: Seconds, for the throttled save (time.monotonic; a test's own).
    """

    def __init__(self, store: StoreProxy, conversation_id: Callable[[], int | None],
                 restored: Callable[[MessageRecord], None], clock: Callable[[], float] = time.monotonic):
        self.store = store
        self._cid = conversation_id
        self._restored = restored
        self._clock = clock
        self.answer: StoredAnswer | None = None  # the answer in flight
        self._unasked = 0  # an ended answer's writes waiting for its message's id before they are asked

    @property
    def writing(self) -> bool:
        """Whether an answer that ended still has writes to ask of the store (its message was not made
        when it ended). An edit that moves or copies the chat's messages waits for them (`after_pending`
        then runs after they are asked), or it would find that answer unfinished."""
        return self._unasked > 0

    def added(self, item: Item, then: Then[MessageRecord] = None, error: OnError = None) -> None:
        """A message joined the chat shown (a question; an answer is kept by `begin` and `answer_finished`,
        a summary by `summary_made`, a tool's result with the answer that called it)."""
        cid = self._cid()
        if cid is None or not isinstance(item, Said):
            return
        m, role = item.message, item.message.role
        if role != "tool":
            self.store.add_message(cid, role, m.content, m.images, then=then, error=error)

    def begin(self, then: Callable[[int], None] | None = None, *, regenerating: int | None = None,
              shown: int = 0) -> None:
        """A turn's answer begins: its message is made (`then` gets its id); or, to answer again in place
        of the stored answer `regenerating` (Regenerate), whose version `shown` was shown, that message
        keeps its versions and gains one (the messages after it are kept with the version shown)."""
        a = self.answer = StoredAnswer(last_save=self._clock())
        if regenerating is not None:
            a.answer_id, a.regenerated = regenerating, shown
            self.store.regenerate_answer(regenerating)
            return
        cid = self._cid()
        if cid is None:
            return

        def made(answer_id: int) -> None:
            a.answer_id = answer_id
            if then is not None:
                then(answer_id)

        self.store.begin_answer(cid, then=made)

    def answer_grew(self, turn: Turn) -> None:
        """The answer streamed on: written at most every SAVE_EVERY_S (a crash loses at most that)."""
        a, now = self.answer, self._clock()
        if a is not None and a.answer_id is not None and now - a.last_save >= SAVE_EVERY_S:
            a.last_save = now
            self.store.update_answer(a.answer_id, turn.text, turn.reasoning)

    def answer_finished(self, turn: Turn, extra: Mapping[str, Any] | None = None) -> None:
        """The turn ended: its answer written whole (with its figures and calls, and `extra` figures: what
        the chat's documents did); a failed one leaves nothing."""
        a, self.answer = self.answer, None
        if a is None:
            return
        if turn.state == "failed":
            self._drop(a)
            return
        f = turn.finished
        text, reasoning = turn.text, turn.reasoning
        reason = f.reason if f is not None else "stop"
        figures = stored_figures(turn, extra.get(SOURCES_KEY) if extra else None)
        if figures and extra:
            figures = {**figures, **extra}

        def finish() -> None:
            if a.answer_id is not None:
                self.store.finish_answer(a.answer_id, text, reason, figures, reasoning)

        if a.answer_id is not None:
            finish()
        else:  # begin_answer has not come back yet; store calls run in order, so after this no-op it has
            self._after_begin(finish)

    def _drop(self, a: StoredAnswer) -> None:
        if a.answer_id is not None and a.regenerated is not None:
            # A new version that failed goes; the one shown before comes back.
            self.store.show_version(a.answer_id, a.regenerated, drop_shown=True, then=self._restored)
            return

        def drop() -> None:  # once begin_answer has come back (calls run in order)
            if a.answer_id is not None:
                self.store.delete_message(a.answer_id)
                a.answer_id = None

        self._after_begin(drop)

    def _after_begin(self, write: Callable[[], None]) -> None:
        """Ask `write` once the calls made so far (begin_answer among them) have come back (`writing` meanwhile)."""
        self._unasked += 1

        def asked() -> None:
            self._unasked -= 1
            write()

        self.store.after_pending(asked)

    def summary_made(self, item: Compacted, then: Then[MessageRecord] = None) -> None:
        """A compaction's summary ends the chat: kept as a "system" message holding its figures."""
        cid = self._cid()
        if cid is not None:
            figures = {"compaction": item.summary.as_dict() if item.summary is not None else {}}
            self.store.add_message(cid, "system", item.text, figures=figures, then=then)

    def dropped(self, items: Sequence[Item]) -> None:
        """Nothing to do: the window deletes a message by id only through Delete with Undo (Regenerate and
        Edit keep the turns after the message with its version before)."""


def answer_figures(turn: Turn) -> dict[str, Any]:
    """The figures an answer's row shows once its turn ended: what was measured, and the thinking budget it
    was answered with (nothing for an answer cut short by an error: not measured to the end)."""
    f = turn.finished
    if f is None or f.error:
        return {}
    figures: dict[str, Any] = f.metrics.as_dict()
    budget = turn.request.options.reasoning_budget
    if figures and budget is not None:
        figures["reasoning_budget"] = budget  # the sidebar shows the thinking against it
    return figures


def stored_figures(turn: Turn, sources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An answer's figures as the history keeps them: the row's, the turn's calls with their results
    (the tool rows of a reopened chat come from them), and the sources it cites (`sources`: already
    worked out by `sources_figure`)."""
    figures = answer_figures(turn)
    calls = [{**done_figures(ev), "result": ev.text[:STORED_RESULT_CHARS]} for ev in turn.calls]
    if calls:
        figures = {**figures, "tool_calls": calls}
    if turn.sources:
        figures = {**figures, SOURCES_KEY: sources if sources is not None else sources_figure(turn.sources, turn.text)}
    return figures


def call_figures(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "tool": call.name, "arguments": call.arguments}


def done_figures(ev: ToolCallDone) -> dict[str, Any]:
    """A call's figures once it ended, as its tool row and the stored answer keep them."""
    return {**call_figures(ev.call), "elapsed_ms": round(ev.elapsed_s * 1000, 1), "is_error": ev.is_error,
            "denied": ev.denied, "stopped": ev.stopped, "not_run": ev.not_run, "round": ev.round}
