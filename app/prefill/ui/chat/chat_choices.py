"""The open chat and how it is asked: its place in the history, its system prompt, its thinking
switches, its tools and its documents, as they are kept with it (a conversation's stored settings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QObject, Signal

from prefill.engine.request import MAX_REASONING_BUDGET, TemplateOptions
from prefill.session.document_chats import ChatDocs
from prefill.store import ConversationRecord
from prefill.store.app_settings import Settings
from prefill.ui.chat.tools.chat_tools import ChatTools, stored_chat_tools
from prefill.ui.workers.store_worker import StoreProxy


class ChatChoices(QObject):
    """The chat shown and what the person chose for it; each choice is kept with it at once.

    Signals:
        options_changed(object): the chat's TemplateOptions (thinking, effort, budget).
        chat_tools_changed(object): the chat's ChatTools (which tools it offers).
        documents_changed(object): the chat's ChatDocs (what it reads), or None.
    """

    options_changed = Signal(object)
    chat_tools_changed = Signal(object)
    documents_changed = Signal(object)

    def __init__(self, store: StoreProxy, parent: QObject | None = None):
        super().__init__(parent)
        self._store = store
        self.conversation_id: int | None = None  # the chat shown (None: none yet)
        self.system_prompt = ""
        self.options = TemplateOptions()  # the thinking switch, effort and budget
        self.chat_tools = ChatTools()  # of the tools the app offers, the ones this chat offers
        self.documents: ChatDocs | None = None  # what the chat reads (session/document_chats.py)
        self._stored: dict[str, Any] = {}  # the chat's settings, as last read or written

    def opened(self, conv: ConversationRecord) -> None:
        """A stored chat is shown: its own choices."""
        self.conversation_id, self.system_prompt = conv.id, conv.system_prompt
        self.set_options(stored_options(conv.settings))
        self._stored = dict(conv.settings) if isinstance(conv.settings, Mapping) else {}
        self._show_tools(stored_chat_tools(conv.settings))
        self._show_documents(ChatDocs.stored(conv.settings))

    def made(self, conv: ConversationRecord, keep_tools: bool) -> None:
        """A new chat is shown; `keep_tools`: the tool switches and the documents chosen before it carry over
        (the documents are kept with it at once)."""
        self.conversation_id, self.system_prompt = conv.id, conv.system_prompt
        self._stored = {}
        if not keep_tools:
            self._show_tools(ChatTools())
            self._show_documents(None)
        elif self.documents is not None:
            self.set_documents(self.documents)

    def set_documents(self, docs: ChatDocs | None) -> None:
        """What this chat reads (None: no documents); kept with it at once."""
        self._show_documents(docs)
        cid = self.conversation_id
        if cid is not None:
            kept = {k: v for k, v in self._stored.items() if k != "documents"}
            if docs is not None:
                kept["documents"] = docs.as_dict()
            self._stored = kept
            self._store.set_conversation_settings(cid, kept)

    def _show_documents(self, docs: ChatDocs | None) -> None:
        if docs != self.documents:
            self.documents = docs
            self.documents_changed.emit(docs)

    def set_system_prompt(self, text: str) -> None:
        self.system_prompt = text
        if self.conversation_id is not None:
            self._store.set_system_prompt(self.conversation_id, text)

    def set_options(self, options: TemplateOptions) -> None:
        """The thinking switch, effort and budget (kept with the chat from its next answer)."""
        if options != self.options:
            self.options = options
            self.options_changed.emit(options)

    def set_chat_tools(self, chat: ChatTools) -> None:
        """Which tools this chat offers; kept with it at once."""
        self._show_tools(chat)
        cid = self.conversation_id
        if cid is not None:
            kept = self._stored = {**self._stored, "tools": chat.as_dict()}
            self._store.set_conversation_settings(cid, kept)

    def _show_tools(self, chat: ChatTools) -> None:
        if chat != self.chat_tools:
            self.chat_tools = chat
            self.chat_tools_changed.emit(chat)

    def record_model(self, model_path: str, s: Settings) -> None:
        """An answer begins: keep with the chat the model and the settings it is made with."""
        assert self.conversation_id is not None
        used = {"model": {k: v for k, v in s.to_dict()["model"].items() if k != "last_model_path"},
                "sampling": s.to_dict()["sampling"],
                "template": {"think": self.options.think, "reasoning_effort": self.options.reasoning_effort,
                             "reasoning_budget": self.options.reasoning_budget},
                "tools": self.chat_tools.as_dict()}
        if self.documents is not None:
            used["documents"] = self.documents.as_dict()
        self._stored = used
        self._store.record_model(self.conversation_id, model_path, used)


def stored_options(settings: Any) -> TemplateOptions:
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
