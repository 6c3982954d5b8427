"""The window's chat: an adapter over the conversation service for the transcript, the message box
and the history.

The controller lives on the GUI thread and joins small parts, each holding one thing: the chat shown
and what was chosen for it (chat_choices.py), showing a chat (chat_opening.py), the answer in flight
and the engine worker's events for it (answering.py), the edits on a message (message_edits.py),
what is written to the history and when (answer_store.py), compaction (compaction_rows.py). What the
model reads and each turn's request come from the conversation service (session/conversation.py),
built from the transcript's rows (row_messages.py); `busy` is derived from the answer in flight and
a running compaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QObject, Signal

from prefill.engine.events import Finished
from prefill.engine.message import ImagePart, Message
from prefill.engine.request import TemplateOptions, Tool
from prefill.session.conversation import Conversation, Said
from prefill.session.document_chats import question_of
from prefill.session.tool_loop import Decision
from prefill.store.app_settings import Settings
from prefill.ui.chat.answer_store import AnswerStore
from prefill.ui.chat.answering import Answering, AnswerRelay
from prefill.ui.chat.chat_choices import ChatChoices
from prefill.ui.chat.chat_opening import ChatOpening
from prefill.ui.chat.compaction_rows import ChatCompaction
from prefill.ui.chat.message_edits import MessageEdits
from prefill.ui.chat.pending_delete import PendingDelete
from prefill.ui.chat.row_messages import conversation_of
from prefill.ui.chat.sidebar.sidebar import EngineSidebar
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.workers.engine_worker import EngineWorker
from prefill.ui.workers.store_messages import store_error_text
from prefill.ui.workers.store_worker import StoreProxy


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
    tool_asked = Signal(object)
    tool_settled = Signal()

    def __init__(self, store: StoreProxy, worker: EngineWorker, model: TranscriptModel,
                 sidebar: EngineSidebar, settings: Callable[[], Settings], model_path: Callable[[], str],
                 tools: Callable[[], tuple[Tool, ...]] | None = None):
        super().__init__()
        self.store, self.worker, self.model = store, worker, model
        self.settings, self.model_path = settings, model_path
        self.tools = tools  # the tools the app offers in a turn (None: none)
        self.choices = ChatChoices(store, self)  # the chat shown, its system prompt, thinking and tools
        self.pending = PendingDelete(model, store)  # a deleted message, while Undo is offered
        self.answers = AnswerStore(store, lambda: self.choices.conversation_id,
                                   lambda record: self.edits.show_version(record))  # the chat in the history
        self.relay = AnswerRelay(worker, model, sidebar, self.answers, settings, self)
        self.relay.started.connect(lambda: self.busy_changed.emit(True))
        self.relay.notice.connect(self.notice)
        self.relay.tool_asked.connect(self.tool_asked)
        self.relay.tool_settled.connect(self.tool_settled)
        self.relay.ended.connect(self._on_relay_ended)
        self.relay.finished.connect(self._on_relay_finished)
        self.compaction = ChatCompaction(self, self)  # the model's summary of the earlier turns
        self.edits = MessageEdits(self, model, store, self.pending, self.compaction)
        self.opening = ChatOpening(store, worker, model, self.choices, self.messages, self)
        self.opening.made.connect(self.conversations_changed)
        self.opening.opened.connect(self.conversation_opened)
        self.opening.row_requested.connect(self.row_requested)
        self._when_idle: Callable[[], None] | None = None  # asked during an answer: done once it has ended
        self.busy_changed.connect(self._on_busy_changed)

    @property
    def answering(self) -> Answering | None:
        """The answer in flight (None: none)."""
        return self.relay.answering

    @property
    def busy(self) -> bool:
        """An answer or a summary is being written (nothing else is asked of the chat meanwhile)."""
        return self.relay.answering is not None or self.compaction.running

    @property
    def writing(self) -> bool:
        """Whether an answer that ended still has writes to ask of the history (`AnswerStore.writing`)."""
        return self.answers.writing

    @property
    def complete(self) -> bool:
        """Whether every row of the open conversation is in the model (a long chat reads its start last)."""
        return self.opening.complete

    @property
    def conversation_id(self) -> int | None:
        return self.choices.conversation_id

    def close_chat(self) -> None:
        """The chat held was deleted: hold none (the next message starts a new one)."""
        self.choices.conversation_id = None

    @property
    def system_prompt(self) -> str:
        return self.choices.system_prompt

    @property
    def options(self) -> TemplateOptions:
        return self.choices.options

    def open_conversation(self, cid: int, message_id: int = -1) -> None:
        """Show a stored conversation: at its end, or at `message_id` if that is one of its messages."""
        if not self.busy:
            self.pending.commit()
            self.opening.open(cid, message_id)

    def new_conversation(self, then: Callable[[int], None] | None = None,
                         error: Callable[[Exception], None] | None = None) -> None:
        """Start a new chat and show it (`then` gets its id). During an answer (Ctrl+N, New chat), the
        answer is stopped first, kept as stopped in its chat, and the new chat opens once it has ended."""
        if self.busy:
            self._when_idle = lambda: self.new_conversation(then, error)
            self.stop()
            return
        self.pending.commit()
        self.opening.new(then, error)

    def conversation(self, options: TemplateOptions | None = None) -> Conversation:
        """The chat shown, as the conversation service holds it, asked as the settings say now (`options`:
        the chat's own unless given). Built from the transcript's rows (row_messages.py): they are what
        the window edits, pages, deletes and undoes, so no second copy has to follow them."""
        s, c = self.settings(), self.choices
        return conversation_of(c.system_prompt, self.model.rows(), sampling=s.sampling,
                               overflow=s.model.overflow(), options=options or c.options,
                               tools=c.chat_tools.offer(self.tools()) if self.tools is not None else (),
                               n_ctx=self.compaction.n_ctx)

    def messages(self, extra_user: str | None = None) -> list[Message]:
        """The conversation as the engine takes it (notices left out; thinking kept apart); an answer's
        tool calls come before it as the loop wrote them: per round, the calls and their results. From
        the chat's last summary on: the system prompt with the summary under it, then the rows after it."""
        out = conversation_of(self.choices.system_prompt, self.model.rows()).model_messages()
        if extra_user is not None:
            out.append(Message("user", extra_user))
        return out

    def send(self, text: str, images: tuple[ImagePart, ...] = ()) -> None:
        """Ask `text`, showing the model `images` (checked at the door) with it."""
        if self.busy:
            return
        self.pending.commit()
        if not self.complete:  # the chat's earlier messages are still being read: send after them
            self.store.after_pending(lambda: self.send(text, images))
            return
        if self.conversation_id is None:
            self.new_conversation(then=lambda _cid: self.send(text, images), error=lambda e: self._unsent(text, e))
            return
        row = self.model.append_row(Row("user", [text], images=images))
        self.answers.added(Said(Message("user", text, images=images)),
                           then=lambda m: self.model.set_message_id(row, m.id), error=lambda e: self._unsent(text, e))
        self.conversations_changed.emit()  # the title comes from the first message
        self.generate()

    def _unsent(self, text: str, error: Exception) -> None:
        self.unsent.emit(text, store_error_text(error))

    def generate(self, version_of: Row | None = None) -> None:
        """Answer the chat as it stands; `version_of`: a stored answer gets a new version (Regenerate)."""
        s, options = self.settings(), self.choices.options
        # The chat's own budget, else its model's (a default in the settings, remembered per model file).
        budget = options.reasoning_budget
        if budget is None:
            budget = s.model_for(self.model_path()).thinking_budget()
        options = replace(options, reasoning_budget=budget)
        turn = self.conversation(options).again()
        self.choices.record_model(self.model_path(), s)
        docs = self.choices.documents
        asked = self.conversation(options) if docs is not None else None
        if docs is not None and asked is not None and question_of(asked) is not None:
            # The question goes through the chat's documents on the engine thread (session/document_chats.py),
            # as the terminal asks it: whole where they fit, else with the passages retrieved for it.
            self.relay.start(turn, budget, version_of, documents=(asked, docs, self.conversation_id))
        else:
            self.relay.start(turn, budget, version_of)

    def stop(self) -> None:
        if self.busy:
            self.worker.stop_answer()  # a question waiting is answered DENY, a running tool is told
            self.relay.settle_question()

    def _on_busy_changed(self, busy: bool) -> None:
        if not busy and self._when_idle is not None:
            then, self._when_idle = self._when_idle, None
            then()

    def _on_relay_ended(self) -> None:
        self.busy_changed.emit(False)
        self.conversations_changed.emit()

    def _on_relay_finished(self, f: Finished) -> None:
        self.answer_finished.emit(f)
        self.compaction.after_answer(f)  # past the threshold with the "summarise" policy: compacted now

    # --- the parts' own methods, as the rest of the window calls them ---------------------------
    def answer_tool(self, decision: Decision) -> None:
        """The person's answer to the tool call asked about (`tool_asked`)."""
        self.relay.answer_tool(decision)

    def compact(self) -> None:
        """Have the model summarise the chat now (the Compact action); said in words either way."""
        self.compaction.compact()
