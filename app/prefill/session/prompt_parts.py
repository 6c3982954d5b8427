"""The next prompt's tokens and what takes them: the system prompt, the tools' schemas, the chat's
documents and the conversation, counted by the backend's own counter (never guessed from the text).

Each part is what it adds to the prompt as the turn would send it: the prompt counted whole, then
again without the tools, without the documents, with the system prompt's words taken out; the
conversation is the rest (the question and the template's own marks with it), so the parts always add
up to the whole.
Where the prompt does not fit, it is counted once more with every earlier turn left out (what no
overflow policy can shorten), with and without the tools, so the window can say when the tools'
schemas are what leaves no room.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from prefill.engine.errors import EngineError
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.session.conversation import Conversation

CountRequest = Callable[[ChatRequest], int | None]
DocumentsMode = Literal["", "whole", "retrieved"]


@dataclass(frozen=True)
class DocumentsDraft:
    """What a chat's documents would add to its next prompt (session/documents.py's `draft`).

    Attributes:
        mode: "whole" (under the system prompt) or "retrieved" (passages before the question).
        system: The block the whole documents put under the system prompt ("" when retrieved).
        context: The passages found for the question, put before it ("" when whole).
        budget: The tokens the documents may take.
        searched: False where the passages could not be looked for yet (the collection is still being
            indexed, or no question has loaded the embedding model): `budget` is then the most they take.
    """

    mode: Literal["whole", "retrieved"]
    system: str = ""
    context: str = ""
    budget: int = 0
    searched: bool = True


@dataclass(frozen=True)
class PromptParts:
    """The next prompt's tokens, part by part, against the context.

    Attributes:
        total: The prompt as the turn would send it.
        system, tools, documents: What each adds to it (0 where there is none).
        n_ctx: The context.
        reserve: The tokens kept free for the answer.
        policy: The overflow policy ("rolling_window", "truncate_middle", "stop", "summarise").
        floor: The prompt with every earlier turn left out (counted only where `total` does not fit).
        floor_without_tools: The same without the tools' schemas.
        documents_mode: How the documents are read ("" where the chat has none).
        documents_budget: The tokens the documents may take.
        documents_searched: False where the passages could not be looked for yet (see `DocumentsDraft`).
    """

    total: int
    system: int
    tools: int
    documents: int
    n_ctx: int
    reserve: int
    policy: str
    floor: int | None = None
    floor_without_tools: int | None = None
    documents_mode: DocumentsMode = ""
    documents_budget: int = 0
    documents_searched: bool = True

    @property
    def conversation(self) -> int:
        """The rest: the messages, the question and the template's own marks."""
        return self.total - self.system - self.tools - self.documents

    @property
    def fits(self) -> bool:
        """The prompt and the room for the answer fit the context as they are."""
        return self.total + self.reserve <= self.n_ctx

    @property
    def fits_at_all(self) -> bool:
        """Some overflow policy can make it fit (every earlier turn left out, it fits)."""
        return self.fits or (self.floor is not None and self.floor + self.reserve <= self.n_ctx)

    @property
    def tools_push_over(self) -> bool:
        """Without the tools' schemas it would fit even with every earlier turn kept or left out, with
        them it cannot fit at all: the tools are what leaves no room."""
        return (not self.fits_at_all and self.floor_without_tools is not None
                and self.floor_without_tools + self.reserve <= self.n_ctx)


def count_parts(conversation: Conversation, question: Message, count: CountRequest, n_ctx: int,
                documents: DocumentsDraft | None = None) -> PromptParts | None:
    """The next prompt's parts: `conversation` (its system prompt, tools, sampling and overflow) with
    `question` asked next and `documents` read as the turn would read them. None where the backend
    does not count (a remote writes its own prompt)."""
    system = conversation.system
    with_docs = (system + "\n\n" + documents.system).strip() if documents and documents.system else system
    context = documents.context if documents is not None else ""
    asked = replace(question, content=context + "\n\n" + question.content) if context else question

    def request(system_prompt: str, tools: bool, q: Message) -> ChatRequest:
        c = Conversation(system_prompt, conversation.items, sampling=conversation.sampling,
                         overflow=conversation.overflow, options=conversation.options,
                         tools=conversation.tools if tools else ())
        return c.request(q)

    full = request(with_docs, True, asked)
    total = count(full)
    if total is None:
        return None
    without_tools = _count(count, request(with_docs, False, asked)) if conversation.tools else total
    without_docs = _count(count, request(system, False, question)) if documents is not None else without_tools
    bare = _count_bare(count, request("", False, question)) if system else without_docs
    tools = max(0, total - without_tools)
    docs = max(0, min(total - tools, without_tools - without_docs))
    system_part = max(0, min(total - tools - docs, without_docs - bare))
    reserve = conversation.overflow.reserve_for(conversation.sampling.max_tokens, n_ctx)
    floor = floor_without_tools = None
    if total + reserve > n_ctx:
        kept = tuple(m for m in full.messages if m.role == "system") + (full.messages[-1],)
        floor = _count(count, replace(full, messages=kept))
        floor_without_tools = _count(count, replace(full, messages=kept, tools=())) if conversation.tools else floor
    return PromptParts(total, system_part, tools, docs, n_ctx, reserve, conversation.overflow.policy, floor,
                       floor_without_tools, documents.mode if documents else "",
                       documents.budget if documents else 0, documents.searched if documents else True)


def _count_bare(count: CountRequest, request: ChatRequest) -> int:
    """The prompt without the system prompt's words, its system message kept empty: a template that writes
    a default system prompt when it is given none (SmolLM2's) would otherwise count that default against
    the system prompt's words. A template that refuses an empty system message is asked without it."""
    if request.messages and request.messages[0].role == "system":
        return _count(count, request)
    try:
        return _count(count, replace(request, messages=(Message("system", ""), *request.messages)))
    except EngineError:
        return _count(count, request)


def _count(count: CountRequest, request: ChatRequest) -> int:
    n = count(request)
    if n is None:  # a backend counts every request or none
        raise ValueError("the backend stopped counting tokens")
    return n
