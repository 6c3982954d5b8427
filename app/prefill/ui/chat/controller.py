"""What happens in a conversation: send, stream, stop, regenerate, edit, delete, and saving it all.

The controller lives on the GUI thread. It asks the engine worker and the store
thread by signal and never waits for either. Streamed text is taken from the
worker's buffer on a 30 ms timer and appended to one transcript row; what is
written to the history, and when, is the service's hooks' (answer_store.py).

What the model reads and each turn's request come from the conversation service
(session/conversation.py), built from the transcript's rows (row_messages.py); the answer in
flight is one `Answering` (the service's `Turn`, and where its row and stored message are), and
`busy` is derived from it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone
from prefill.engine.message import ImagePart, Message, ToolCall
from prefill.engine.request import MAX_REASONING_BUDGET, TemplateOptions, Tool
from prefill.session.conversation import Conversation, Said, Turn
from prefill.session.tool_loop import Decision, LoopFinished, ToolCallDone, ToolCallStarted
from prefill.store import ConversationRecord, MessageRecord
from prefill.store.app_settings import Settings
from prefill.ui.chat.answer_store import AnswerStore, answer_figures, call_figures, done_figures
from prefill.ui.chat.chat_tools import ChatTools, stored_chat_tools
from prefill.ui.chat.compaction_rows import REMOVED, SUMMARY, ChatCompaction
from prefill.ui.chat.pending_delete import PendingDelete
from prefill.ui.chat.row_messages import conversation_of
from prefill.ui.chat.sidebar import EngineSidebar
from prefill.ui.chat.stored_rows import message_rows, rows_of
from prefill.ui.chat.transcript_model import Row, TranscriptModel
from prefill.ui.shared.engine_worker import EngineWorker
from prefill.ui.shared.store_messages import store_error_text
from prefill.ui.shared.store_worker import StoreProxy

FLUSH_MS = 30
TAIL_ROWS = 40  # a long chat opens with this many of its last messages, then reads the rest
PREPEND_SLICE = 500  # the rest goes in this many rows a turn of the event loop


@dataclass
class Answering:
    """The answer in flight in the window: the service's Turn (its request, answer so far, calls and
    state), and where the window shows it (where it is stored: `AnswerStore.answer`).

    Attributes:
        id: Tags the engine worker's events for this answer.
        turn: The conversation service's turn.
        row: The answer's transcript row (it moves down as tool rows go in before it).
        budget: The thinking budget it is answered with (None: no limit).
        tool_rows: A running call's id: its transcript row.
        asked: The serial of the tool question shown now (0: none).
    """

    id: int
    turn: Turn
    row: int
    budget: int | None
    tool_rows: dict[str, int] = field(default_factory=dict)
    asked: int = 0


class ChatController(QObject):
    """Signals:
        notice(str): something the user should read (overflow, errors); "" clears it.
        conversations_changed(): titles or the list changed.
        busy_changed(bool): an answer started or ended.
        conversation_opened(int): the transcript now shows this conversation.
        row_requested(int): show this transcript row (the message a search hit opened at).
        answer_finished(object): the Finished event of the last answer.
        unsent(str, str): a message the store could not keep (its text goes back to the input box),
            and why, in words.
        options_changed(object): the open conversation's TemplateOptions (thinking, effort, budget).
        chat_tools_changed(object): the open conversation's ChatTools (which tools it offers).
        tool_asked(object): the model wants to run this ToolCall: ask the person (`answer_tool`).
        tool_settled(): the question is no longer asked (answered, or Stop): hide it.
    """

    notice = Signal(str)
    conversations_changed = Signal()
    busy_changed = Signal(bool)
    conversation_opened = Signal(int)
    row_requested = Signal(int)
    answer_finished = Signal(object)
    unsent = Signal(str, str)
    options_changed = Signal(object)
    chat_tools_changed = Signal(object)
    tool_asked = Signal(object)
    tool_settled = Signal()

    def __init__(self, store: StoreProxy, worker: EngineWorker, model: TranscriptModel,
                 sidebar: EngineSidebar, settings: Callable[[], Settings], model_path: Callable[[], str],
                 tools: Callable[[], tuple[Tool, ...]] | None = None):
        super().__init__()
        self.store, self.worker, self.model, self.sidebar = store, worker, model, sidebar
        self.settings = settings
        self.model_path = model_path
        self.tools = tools  # the tools the app offers in a turn (None: none)
        self.chat_tools = ChatTools()  # of those, the ones this conversation offers
        self._stored_settings: dict[str, Any] = {}  # this conversation's, as last read or written
        self.conversation_id: int | None = None
        self.system_prompt = ""
        self.options = TemplateOptions()  # this conversation's thinking switch, effort and budget
        self._complete = True  # every row of the open conversation is in the model
        self._opening = 0
        self._ids = itertools.count(1)
        self.answering: Answering | None = None  # the answer in flight
        self.pending = PendingDelete(model, store)  # a deleted message, while Undo is offered
        self.answers = AnswerStore(store, lambda: self.conversation_id, self._show_answer)  # the chat in the history
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
        self.compaction = ChatCompaction(self, self)  # the model's summary of the earlier turns (compaction_rows)

    @property
    def busy(self) -> bool:
        """An answer or a summary is being written (nothing else is asked of the chat meanwhile)."""
        return self.answering is not None or self.compaction.running

    @property
    def complete(self) -> bool:
        """Whether every row of the open conversation is in the model (a long chat reads its start last)."""
        return self._complete

    def compact(self) -> None:
        """Have the model summarise the chat now (the Compact action); said in words either way."""
        self.compaction.compact()

    # --- conversations --------------------------------------------------------------------
    def open_conversation(self, cid: int, message_id: int = -1) -> None:
        """Show a stored conversation: at its end, or at `message_id` if that is one of its messages.

        Opened at its end, a long chat reads and shows its last TAIL_ROWS messages first, then the
        rest (one more store call); until then nothing is sent from it, so no prompt misses them."""
        if self.busy:
            return
        self.pending.commit()
        tail = None if message_id >= 0 else TAIL_ROWS
        self._complete = False
        self._opening += 1
        serial = self._opening  # a later open (even of this chat) supersedes this one's remainder

        def show(result: tuple[ConversationRecord, list[Row]]) -> None:
            conv, rows = result
            if conv.id != self.conversation_id:
                self.worker.forget_approvals()  # "always allow" holds for the chat it was said in
            self.conversation_id, self.system_prompt = conv.id, conv.system_prompt
            self._set_options(_stored_options(conv.settings))
            self._stored_settings = dict(conv.settings) if isinstance(conv.settings, Mapping) else {}
            self._set_chat_tools(stored_chat_tools(conv.settings))
            self.model.set_rows(rows)
            if tail is None or len(rows) < tail:
                complete()
            else:
                first = rows[0].position
                self.store.read_messages(cid, before=first, then=lambda r: earlier(rows_of(r)[1]))
            self.conversation_opened.emit(conv.id)
            if message_id >= 0:
                found = [i for i, r in enumerate(rows) if r.message_id == message_id]
                if found:
                    self.row_requested.emit(found[0])

        def earlier(rows: list[Row]) -> None:
            # Put in a slice per turn of the event loop, nearest first: the view measures what it
            # gets, and thousands at once would stall the window as long as a whole open used to.
            if self._opening != serial:
                return
            if len(rows) > PREPEND_SLICE:
                self.model.prepend_rows(rows[-PREPEND_SLICE:])
                QTimer.singleShot(0, lambda: earlier(rows[:-PREPEND_SLICE]))
                return
            self.model.prepend_rows(rows)
            complete()

        def complete() -> None:
            self._complete = True
            # The engine saves the last chat's cache and restores this one's.
            self.worker.resume(self.messages())

        self.store.read_messages(cid, last=tail, then=lambda r: show(rows_of(r)))

    def new_conversation(self, then: Callable[[int], None] | None = None,
                         error: Callable[[Exception], None] | None = None) -> None:
        if self.busy:
            return
        self.pending.commit()
        fresh = self.conversation_id is not None  # else the switches chosen before the first chat carry over

        def made(conv: ConversationRecord) -> None:
            self.worker.forget_approvals()
            self.conversation_id, self.system_prompt = conv.id, conv.system_prompt
            self._opening += 1  # what an earlier open still had to read is not for this chat
            self._complete = True
            self._stored_settings = {}
            if fresh:
                self._set_chat_tools(ChatTools())
            self.model.set_rows([])
            self.worker.resume(self.messages())
            self.conversations_changed.emit()
            self.conversation_opened.emit(conv.id)
            if then is not None:
                then(conv.id)

        self.store.create_conversation("New chat", self.system_prompt, then=made, error=error)

    def set_system_prompt(self, text: str) -> None:
        self.system_prompt = text
        if self.conversation_id is not None:
            self.store.set_system_prompt(self.conversation_id, text)

    def set_options(self, options: TemplateOptions) -> None:
        """The thinking switch, effort and budget for this conversation (kept with it from its next
        answer); a budget of None: the model's default (Settings)."""
        self._set_options(options)

    def _set_options(self, options: TemplateOptions) -> None:
        if options != self.options:
            self.options = options
            self.options_changed.emit(options)

    def set_chat_tools(self, chat: ChatTools) -> None:
        """Which tools this conversation offers; kept with it at once."""
        self._set_chat_tools(chat)
        cid = self.conversation_id
        if cid is not None:
            kept = self._stored_settings = {**self._stored_settings, "tools": chat.as_dict()}
            self.store.set_conversation_settings(cid, kept)

    def _set_chat_tools(self, chat: ChatTools) -> None:
        if chat != self.chat_tools:
            self.chat_tools = chat
            self.chat_tools_changed.emit(chat)

    def conversation(self, options: TemplateOptions | None = None) -> Conversation:
        """The chat shown, as the conversation service holds it, asked as the settings say now (`options`:
        the chat's own unless given). Built from the transcript's rows (row_messages.py): they are what
        the window edits, pages, deletes and undoes, so no second copy has to follow them."""
        s = self.settings()
        return conversation_of(self.system_prompt, self.model.rows(), sampling=s.sampling,
                               overflow=s.model.overflow(), options=options or self.options,
                               tools=self.chat_tools.offer(self.tools()) if self.tools is not None else (),
                               n_ctx=self.compaction.n_ctx)

    def messages(self, extra_user: str | None = None) -> list[Message]:
        """The conversation as the engine takes it (notices left out; thinking kept apart); an answer's
        tool calls come before it as the loop wrote them: per round, the calls and their results. From
        the chat's last summary on: the system prompt with the summary under it, then the rows after it."""
        out = conversation_of(self.system_prompt, self.model.rows()).model_messages()
        if extra_user is not None:
            out.append(Message("user", extra_user))
        return out

    # --- a turn -------------------------------------------------------------------------
    def send(self, text: str, images: tuple[ImagePart, ...] = ()) -> None:
        """Ask `text`, showing the model `images` (checked at the door) with it."""
        if self.busy:
            return
        self.pending.commit()
        if not self._complete:  # the chat's earlier messages are still being read: send after them
            self.store.after_pending(lambda: self.send(text, images))
            return
        if self.conversation_id is None:
            self.new_conversation(then=lambda _cid: self.send(text, images), error=lambda e: self._unsent(text, e))
            return
        row = self.model.append_row(Row("user", [text], images=images))
        self.answers.added(Said(Message("user", text, images=images)),
                           then=lambda m: self._set_id(row, m.id), error=lambda e: self._unsent(text, e))
        self.conversations_changed.emit()  # the title comes from the first message
        self._generate()

    def _unsent(self, text: str, error: Exception) -> None:
        self.unsent.emit(text, store_error_text(error))

    def _set_id(self, row: int, message_id: int) -> None:
        if row < self.model.rowCount():
            self.model.update_row(row, message_id=message_id)

    def _generate(self, version_of: Row | None = None) -> None:
        """Answer the chat as it stands; `version_of`: a stored answer gets a new version (Regenerate)."""
        assert self.conversation_id is not None
        s = self.settings()
        # The chat's own budget, else its model's (a default in the settings, remembered per model file).
        budget = self.options.reasoning_budget
        if budget is None:
            budget = s.model_for(self.model_path()).thinking_budget()
        turn = self.conversation(replace(self.options, reasoning_budget=budget)).again()
        answer = Row("assistant", [], streaming=True)
        if version_of is not None:
            answer.message_id, answer.position = version_of.message_id, version_of.position
            answer.version, answer.versions = version_of.versions, version_of.versions + 1
        row = self.model.append_row(answer)
        t = self.answering = Answering(next(self._ids), turn, row, budget)
        self.busy_changed.emit(True)
        self.notice.emit("")
        used = {"model": {k: v for k, v in s.to_dict()["model"].items() if k != "last_model_path"},
                "sampling": s.to_dict()["sampling"],
                "template": {"think": self.options.think, "reasoning_effort": self.options.reasoning_effort,
                             "reasoning_budget": self.options.reasoning_budget},
                "tools": self.chat_tools.as_dict()}
        self._stored_settings = used
        self.store.record_model(self.conversation_id, self.model_path(), used)
        if version_of is None:
            self.answers.begin(then=lambda answer_id: self._set_id(row, answer_id))
        else:
            self.answers.begin(regenerating=version_of.message_id, shown=version_of.version)
        self.sidebar.set_budget(budget)
        self.sidebar.begin_answer()
        self.worker.generate(t.id, turn.request)
        self._timer.start()

    def stop(self) -> None:
        if self.busy:
            self.worker.stop_answer()  # a question waiting is answered DENY, a running tool is told
            self._settle_question()

    def answer_tool(self, decision: Decision) -> None:
        """The person's answer to the tool call asked about (`tool_asked`)."""
        t = self.answering
        if t is not None and t.asked:
            self.worker.answer_tool(t.asked, decision)
            self._settle_question()

    def _settle_question(self) -> None:
        t = self.answering
        if t is not None and t.asked:
            t.asked = 0
            self.tool_settled.emit()

    def flush(self) -> None:
        """Move streamed text from the worker's buffer to the transcript row: O(new text)."""
        thinking, text = self.worker.take_streamed()
        t = self.answering
        if t is None:
            return
        t.turn.grow(thinking, text)
        self.model.append_reasoning(t.row, thinking)
        self.model.append_text(t.row, text)
        self.answers.answer_grew(t.turn)

    def _current(self, request: int) -> Answering | None:
        """The answer in flight, if the worker's event `request` is about it."""
        t = self.answering
        return t if t is not None and t.id == request else None

    # --- worker events ---------------------------------------------------------------------
    def _on_worker_prefill_done(self, request: int, p: PrefillDone) -> None:
        if self._current(request) is None:
            return
        self.sidebar.on_prefill(p)
        if p.overflow_note:
            policy = self.settings().model.overflow_policy.replace("_", " ")
            self.notice.emit(f"{p.overflow_note} ({policy}).")

    def _on_worker_metrics(self, request: int, m: MetricsSnapshot) -> None:
        t = self._current(request)
        if t is not None:
            self.sidebar.on_metrics(m)
            if 0 <= t.row < self.model.rowCount() and m.reasoning_tokens:
                self.model.update_row(t.row, figures=m.as_dict())  # the thinking's live count

    def _on_worker_finished(self, request: int, f: Finished) -> None:
        t = self._current(request)
        if t is None:
            return
        self.flush()
        self._timer.stop()
        t.turn.finish(f)
        self.model.update_row(t.row, content=f.text, reasoning=f.reasoning, streaming=False,
                              figures=answer_figures(t.turn), finish_reason=f.reason)
        self.sidebar.on_finished(f)
        self.answers.answer_finished(t.turn)  # with its calls (the tool rows of a reopened chat come from them)
        self._end()
        if f.error:
            self.notice.emit(f.error)
        self.answer_finished.emit(f)
        self.compaction.after_answer(f)  # past the threshold with the "summarise" policy: compacted now

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
        self._settle_question()
        t.turn.take(ev)
        t.tool_rows[ev.call.id] = self._insert_tool_row(t, Row("tool", [], call_figures(ev.call), streaming=True))

    def _on_worker_tool_done(self, request: int, ev: ToolCallDone) -> None:
        t = self._current(request)
        if t is None:
            return
        self._settle_question()
        t.turn.take(ev)
        figures = done_figures(ev)
        row = t.tool_rows.pop(ev.call.id, -1)
        if row >= 0:
            self.model.update_row(row, content=ev.text, streaming=False, figures=figures)
        else:
            self._insert_tool_row(t, Row("tool", [ev.text], figures))

    def _insert_tool_row(self, t: Answering, row: Row) -> int:
        at = t.row
        self.flush()
        self.model.insert_row(at, row)
        t.row = at + 1  # the answer moved down one
        return at

    def _on_worker_tool_loop_finished(self, request: int, end: LoopFinished) -> None:
        if self._current(request) is not None:
            self._settle_question()
            if end.note:
                self.notice.emit(f"Tools: {end.note}.")

    def _on_worker_failed(self, request: int, message: str) -> None:
        t = self._current(request)
        if t is None:
            return
        self._timer.stop()
        self.worker.take_streamed()
        t.turn.fail(message)
        a = self.answers.answer
        # A new answer that failed leaves the history; a new version gives way to the one shown before,
        # which comes back in its row with its tool rows (`_show_answer`).
        self.answers.answer_finished(t.turn)
        if a is not None and a.regenerated is not None:
            if 0 <= t.row < self.model.rowCount():
                self.model.update_row(t.row, streaming=False)
            self.notice.emit(f"{message} The answer before it is kept.")
            self._end()
            return
        if 0 <= t.row < self.model.rowCount():
            self.model.remove_row(t.row)
        # The question stays: it can be sent again as it is (Retry) or edited.
        self.notice.emit(f"{message} Your message is kept: retry it, or edit it.")
        self._end()

    def _end(self) -> None:
        self._settle_question()
        self.answering = None
        self.busy_changed.emit(False)
        self.conversations_changed.emit()

    # --- actions on a message ----------------------------------------------------------------
    def regenerate(self, row: int) -> None:
        """Answer again in place of the answer at `row`: it keeps its versions and gains one (anything
        after it goes)."""
        if self.busy or not self._complete or row <= 0 or self.model.row(row).role != "assistant":
            return
        old = self.model.row(row)
        if old.message_id < 0:  # its row in the history is on its way: regenerate once it is there
            def again() -> None:
                if row < self.model.rowCount() and self.model.row(row).message_id >= 0:
                    self.regenerate(row)

            self.store.after_pending(again)
            return
        self.pending.commit()
        row = _first_of_answer(self.model, row)  # the calls that answer made go with it
        self.model.remove_from(row)
        self._generate(version_of=old)

    def page(self, row: int, step: int) -> None:
        """Show another version of the answer at `row` (-1 the one before, +1 the one after)."""
        r = self.model.row(row) if 0 <= row < self.model.rowCount() else None
        if self.busy or r is None or r.role != "assistant" or r.message_id < 0:
            return
        to = r.version + step
        if 0 <= to < r.versions:
            self.pending.commit()
            self.store.show_version(r.message_id, to, then=self._show_answer)

    def _show_answer(self, record: MessageRecord) -> None:
        """Put a stored answer's shown version (and its tool rows) in place of the rows it has now."""
        at = next((i for i, r in enumerate(self.model.rows()) if r.message_id == record.id), -1)
        if at < 0 or self.busy:
            return
        first, new = _first_of_answer(self.model, at), message_rows(record)
        if at == first and len(new) == 1:  # no tool rows before or after: one row changes
            a = new[0]
            self.model.update_row(at, content=a.content, reasoning=a.reasoning, figures=a.figures,
                                  finish_reason=a.finish_reason, version=a.version, versions=a.versions,
                                  streaming=False)
            return
        for _ in range(at - first + 1):
            self.model.remove_row(first)
        for i, r in enumerate(new):
            self.model.insert_row(first + i, r)

    def branch(self, row: int) -> None:
        """A new chat holding this one up to and including `row`, opened (same system prompt and settings)."""
        mid = self.model.row(row).message_id if 0 <= row < self.model.rowCount() else -1
        if self.busy or not self._complete or mid < 0:
            return
        self.pending.commit()

        def made(conv: ConversationRecord) -> None:
            self.conversations_changed.emit()
            self.open_conversation(conv.id)

        self.store.branch_conversation(mid, then=made)

    def retry(self, row: int) -> None:
        """Ask again a question whose answer failed (the last row, a user message)."""
        rows = self.model.rows()
        if self.busy or not self._complete or rows[row].role != "user" or any(
            r.role not in ("notice", "tool") for r in rows[row + 1 :]
        ):
            return
        self._generate()

    def edit(self, row: int, text: str) -> None:
        """Replace a user message; the answer after it is generated anew. A summary is edited in place."""
        if 0 <= row < self.model.rowCount() and self.model.row(row).role == SUMMARY:
            self.compaction.edit(row, text)
            return
        if self.busy or not self._complete or self.model.row(row).role != "user" or not text.strip():
            return
        self.pending.commit()
        mid = self.model.row(row).message_id
        self.model.remove_from(row + 1)
        self.model.update_row(row, content=text)
        if mid >= 0:
            self.store.edit_message(mid, text)
        self._generate()

    def delete(self, row: int) -> None:
        """Hide the message at `row` and offer Undo; the history lets it go when the offer ends."""
        if not self.busy and 0 <= row < self.model.rowCount():
            self.pending.hide(row, REMOVED if self.model.row(row).role == SUMMARY else "Message deleted.")


def _first_of_answer(model: TranscriptModel, row: int) -> int:
    """The first row of the answer at `row`: its tool calls come before it."""
    while row > 0 and model.row(row - 1).role == "tool":
        row -= 1
    return row


def _stored_options(settings: Any) -> TemplateOptions:
    """A conversation's saved thinking switch, effort and budget (whatever a file holds: checked here;
    a budget that is not a number of tokens in range is none, the model's default)."""
    t = settings.get("template") if isinstance(settings, Mapping) else None
    if not isinstance(t, dict):
        return TemplateOptions()
    think = t.get("think")
    effort = t.get("reasoning_effort")
    budget = t.get("reasoning_budget")
    if isinstance(budget, bool) or not isinstance(budget, int) or not 0 <= budget <= MAX_REASONING_BUDGET:
        budget = None
    try:
        return TemplateOptions(think if isinstance(think, bool) else None, effort if isinstance(effort, str) else "",
                               budget)
    except ValueError:
        return TemplateOptions(reasoning_budget=budget)
