"""The server's core, which knows no dialect: a checked request in, the engine's events out.

Each dialect (openai/, anthropic/) parses its bodies into a `GenerationRequest`, leases the model
it names (`ServeState.lease`), and calls `start`: the turn is rendered with the model's `ModelChat`,
priced and refused before it costs anything (`cost_bounds.py`), constrained (a required call, a JSON
answer), submitted to the model's `BatchScheduler`, and its events come back on the event loop
(`generate.EventStream`). The `Generation` it returns is all a dialect needs to write its reply
or its stream: the events, the reader that splits them into thinking, answer and tool calls, and
the handle that cancels the request. Finish reasons, usage figures and calls are the engine's own;
each dialect words them.

A request that names a document collection (`documents`, server/documents/) has its passages put before
its question, or gets the `search_documents` tool: then a `Generation` is several answers in a row (the
model's search calls answered by the server between them), read by the dialect as one (`batches`, `read`,
`whole`), and its reply carries the `sources` given (`extension`).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace

import anyio.to_thread
from starlette.requests import Request

from prefill.engine.batch.request import BatchEvent, Failed, RequestHandle
from prefill.engine.errors import EngineError, GrammarError, TemplateError
from prefill.engine.events import Finished, FinishReason, Token
from prefill.engine.message import Message, ToolCall, images_of
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.model_chat import plain_reader
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.engine.settings import ServeSampling
from prefill.engine.vision.prompt_images import tokenize_with_images
from prefill.pool.pool import Lease
from prefill.server.access_log import note_tokens
from prefill.server.compaction import compact
from prefill.server.documents.field import DocumentsAsked
from prefill.server.documents.search import CollectionSearch
from prefill.server.documents.turn import MAX_SEARCH_ROUNDS, TOOL_NAME, DocumentsTurn
from prefill.server.errors import ApiError, bad_request
from prefill.server.generate import EventStream, TokenWrites, finished, submit
from prefill.server.images import ImageRef, attach_images
from prefill.server.state import ServedModel, ServeState
from prefill.wire.openai_chat import ToolsAsked as ToolsAsked  # what every dialect's parser builds

UNLIMITED = 1 << 20  # no max_tokens: the schema's maximum; a slot's context is the real bound
# Sampling when a request leaves a field out: llama.cpp's usual chain, without a repeat penalty
# (OpenAI has none; frequency and presence penalties are the API's own).
DEFAULTS = ServeSampling(repeat_penalty=1.0)


@dataclass(frozen=True)
class GenerationRequest:
    """A chat or completion request, checked (by whichever dialect's parser)."""

    kind: str  # "chat" or "completion"
    model: str
    messages: tuple[Message, ...] = ()  # chat
    prompt: str = ""  # completion
    stream: bool = False
    include_usage: bool = False
    sampling: ServeSampling = field(default_factory=lambda: DEFAULTS)
    tools: ToolsAsked = field(default_factory=ToolsAsked)
    images: tuple[ImageRef, ...] = ()  # chat: the image parts, unread (server/images.py reads them)
    options: TemplateOptions = field(default_factory=TemplateOptions)  # chat: how a reasoning model thinks
    compaction: str = "off"  # chat: "auto", summarise a conversation that would not fit (server/compaction.py)
    documents: DocumentsAsked | None = None  # chat: a collection to answer from (server/documents/)

    @property
    def chat_request(self) -> ChatRequest:
        """A chat's turn as every backend takes it."""
        t = self.tools
        return ChatRequest(self.messages, self.sampling, options=self.options, tools=t.tools, tool_choice=t.choice,
                           response_format=t.response_format, parallel_tool_calls=t.parallel)


@dataclass
class Generation:
    """One request on its way through the scheduler, as a dialect writes it out.

    With the `search_documents` tool, one request is several answers in a row: an answer that ends with
    the server's search calls only is followed by the next, which reads their results (`then` starts it).
    A dialect reads them as one: `batches` (a stream's events, every answer's in turn), `read` (the search
    calls never shown, the ends between answers held back), `whole` (a reply that waits for the last).

    Attributes:
        handle: cancels the request (its slot is free at the scheduler's next step); the answer's in hand.
        stream: the engine's events on the event loop (`Token`, then `Finished` or `Failed`).
        splitter: the answer's reader: thinking apart from the answer, tool calls taken out.
        compacted: what `compaction: auto` did (None: nothing).
        prompt_tokens: the prompt's length, known before its prefill.
        documents: the collection's passages given and the reply's `sources` (None: no documents).
        then: starts the answer after this one, once its search calls are answered (None: this is the last).
    """

    handle: RequestHandle
    stream: EventStream
    splitter: AnswerSplit
    compacted: dict[str, object] | None = None
    prompt_tokens: int = 0  # the prompt's length, known before its prefill
    documents: DocumentsTurn | None = None
    then: Callable[[Generation], Awaitable[Generation]] | None = None
    ended: Finished | None = field(default=None, init=False)  # the answer before the one in hand
    _said: str = field(default="", init=False)  # what the answers before this one said
    _tokens_before: int = field(default=0, init=False)  # the tokens they wrote
    _next: bool = field(default=False, init=False)  # the answer in hand ended with searches: the next is due

    def cancel(self) -> None:
        """Cancel the answer in hand (a no-op once it has ended)."""
        self.handle.cancel()

    def _runs(self, c: ToolCall) -> bool:
        return self.documents is not None and self.documents.runs(c.name)

    def _searches_only(self) -> bool:
        """The answer in hand made calls, each the server's, and another answer may follow."""
        calls = self.splitter.calls
        return self.then is not None and bool(calls) and all(self._runs(c) for c in calls)

    @property
    def calls(self) -> list[ToolCall]:
        """The calls of the answer in hand that are the client's (the server's searches left out)."""
        return [c for c in self.splitter.calls if not self._runs(c)]

    def final_reason(self, reason: FinishReason) -> FinishReason:
        """"tool_calls" for an answer that ended by itself after making calls of the client's, else `reason`."""
        return "tool_calls" if self.calls and reason == "stop" else reason

    def _summed(self, end: Finished) -> Finished:
        """The last answer's end, counting the tokens the answers before it wrote."""
        if not self._tokens_before:
            return end
        return replace(end, metrics=replace(end.metrics,
                                            completion_tokens=end.metrics.completion_tokens + self._tokens_before))

    def read(self, events: list[BatchEvent]) -> Step:
        """What a batch of events (`batches()`) says, split for a stream: the tokens' thinking and
        answer, piled up (and what the reader held back, at the end), the client's calls finished in them,
        and the end (`Finished` or `Failed`) if it came. The end of an answer another follows is not one."""
        texts = [ev.text for ev in events if type(ev) is Token]
        reasoning, content = self.splitter.split("".join(texts)) if texts else ("", "")
        end = events[-1]
        if isinstance(end, Finished):
            more_reasoning, more = self.splitter.finish("", end.reason)
            reasoning, content = reasoning + more_reasoning, content + more
        calls = [c for c in self.splitter.new_calls() if not self._runs(c)]
        if isinstance(end, Finished):
            if self._searches_only():
                self.ended, self._next = end, True
                return Step(reasoning, content, calls, None)
            end = self._summed(end)
        return Step(reasoning, content, calls, end if isinstance(end, Finished | Failed) else None)

    def batches(self) -> AsyncIterator[list[BatchEvent]]:
        """The events of every answer in turn, all that piled up at once (`read` each batch); a next answer
        that cannot start ends them with a `Failed`. An answer no other follows (no `then`) is its stream's
        own batches: no generator of this one between, for every token."""
        return self.stream.batches() if self.then is None else self._answers()

    async def _answers(self) -> AsyncGenerator[list[BatchEvent], None]:
        while True:
            events = self.stream.batches()
            try:
                async for batch in events:
                    yield batch
                    if self._next:
                        break
            finally:
                await events.aclose()
            if not self._next:
                return
            self._next = False
            try:
                await self._advance()
            except ApiError as e:
                yield [Failed(e.message)]
                return

    async def whole(self, request: Request) -> Whole:
        """The last answer whole, for a reply that is not streamed (the answers before it said first). A
        client that disconnects while waiting cancels the request (499); a `Failed` is a server error."""
        while True:
            ev = await finished(self.handle, self.stream, request)
            reasoning, content = self.splitter.finish(ev.text, ev.reason)
            if not self._searches_only():
                ev = self._summed(ev)
                return Whole(ev, reasoning, self._said + content, self.calls, self.final_reason(ev.reason))
            self.ended = ev
            await self._advance()

    async def _advance(self) -> None:
        """The next answer started (its searches answered), in place of the one that ended."""
        assert self.then is not None and self.ended is not None
        nxt = await self.then(self)
        self._said += self.splitter.answer_text
        self._tokens_before += self.ended.metrics.completion_tokens
        self.handle, self.stream, self.splitter = nxt.handle, nxt.stream, nxt.splitter
        self.prompt_tokens, self.then = nxt.prompt_tokens, nxt.then

    def token_writes(self, render: Callable[[list[BatchEvent]], str]) -> TokenWrites | None:
        """What the scheduler thread needs to write this stream's tokens itself (`render`: a dialect's text
        for a batch of them), or None for a stream of several answers, whose ends the loop reads between."""
        return TokenWrites(self.stream, render) if self.then is None and self.stream.tokens else None

    def extension(self) -> dict[str, object]:
        """Prefill's fields for the reply's end: `sources` and `retrieval` with documents, else none."""
        if self.documents is None:
            return {}
        return self.documents.fields(self._said + self.splitter.answer_text)


@dataclass(frozen=True)
class Whole:
    """The last answer of a `Generation`, whole (`Generation.whole`).

    Attributes:
        end: its `Finished` (the figures count the tokens every answer wrote).
        reasoning, content: its thinking and its answer (the answers before it said first).
        calls: the client's calls it made.
        reason: its finish reason, "tool_calls" after calls of the client's.
    """

    end: Finished
    reasoning: str
    content: str
    calls: list[ToolCall]
    reason: FinishReason


@dataclass(frozen=True)
class Step:
    """One batch of a streamed answer (`Generation.read`)."""

    reasoning: str
    content: str
    calls: list[ToolCall]
    end: Finished | Failed | None  # None: more to come


async def start(served: ServedModel, lease: Lease, request: Request, req: GenerationRequest,
                label: str, state: ServeState | None = None) -> Generation:
    """Render, price, constrain and submit `req` on `served` (leased by `lease`); `label` names it in
    the slots table. The request is counted by the model's `ChatModel` until it ends, so the lease may
    end when this returns. A request that names a collection (`documents`) gets its passages or the
    search tool first, from `state`'s index.

    Raises:
        ApiError: 400 for what the request asks that this model cannot do (a token it does not have,
            a schema that makes no grammar, a prompt past its context), 429 and 503 from the scheduler;
            404 for a collection the index does not hold.
    """
    n_vocab = served.chat.runtime.n_vocab
    unknown = [t for t, _ in req.sampling.logit_bias if t >= n_vocab]
    if unknown:
        raise bad_request(f"'logit_bias' names token {unknown[0]}, which this model does not have "
                          f"(its tokens are 0 to {n_vocab - 1}).", "logit_bias")
    if req.documents is None:
        return await _submit(served, request, req, label)
    req, turn = await with_documents(state, served, req)
    gen = await _submit(served, request, req, label)
    gen.documents = turn
    if turn.mode == "tool" and state is not None:
        gen.then = _next_round(state, served.id, request, req, label, turn, 1)
    return gen


async def with_documents(state: ServeState | None, served: ServedModel,
                         req: GenerationRequest) -> tuple[GenerationRequest, DocumentsTurn]:
    """The request with its collection's passages before its last user message ("passages"), or with the
    search tool beside its own ("tool"), and what the documents did (`start` sends it; Anthropic's
    count_tokens counts it)."""
    asked = req.documents
    assert asked is not None
    if req.kind != "chat":
        raise bad_request("'documents' needs a chat request (messages), not a text completion.", "documents")
    docs = state.documents if state is not None else None
    if state is None or docs is None:
        raise bad_request("This server keeps no document collections.", "documents")
    own = req.tools.tools
    mode = asked.mode if asked.mode != "auto" else "tool" if own else "passages"
    if mode == "tool" and any(t.name == TOOL_NAME for t in own):
        raise bad_request(f"A tool of the request is named {TOOL_NAME!r}, the server's own search tool: name it "
                          "otherwise.", "tools")
    search = CollectionSearch(state, docs, asked, mode)
    await search.prepare()
    turn = DocumentsTurn(search)
    req = replace(req, documents=None)
    if mode == "tool":
        tools = replace(req.tools, tools=(*own, turn.tool), choice=req.tools.choice if own else "auto")
        return replace(req, tools=tools), turn
    at = next((i for i in range(len(req.messages) - 1, -1, -1) if req.messages[i].role == "user"), None)
    if at is None:
        raise bad_request("'documents' are searched with the last user message, and this request has none.",
                          "documents")
    question = req.messages[at].content
    room = await anyio.to_thread.run_sync(_room, served, req)
    block = await turn.passages(question, _counter(served), room // 2)
    if not block:
        return req, turn
    messages = list(req.messages)
    messages[at] = replace(messages[at], content=block + "\n\n" + question)
    return replace(req, messages=tuple(messages)), turn


def _counter(served: ServedModel) -> Callable[[str], int]:
    """Tokens of a text in the middle of the prompt, by the chat model's tokenizer."""
    return lambda text: len(served.chat.tokenize(text, False))


def _reserve(served: ServedModel, req: GenerationRequest) -> int:
    """The tokens kept for the answer: its max_tokens, at most a quarter of a slot's context."""
    n_ctx = served.scheduler.n_ctx_seq
    return min(req.sampling.max_tokens, n_ctx // 4)


def _room(served: ServedModel, req: GenerationRequest) -> int:
    """A slot's context less the request's prompt as it stands and the room kept for the answer."""
    try:
        used = len(served.chat.tokenize(served.chat.text_of(req.chat_request)))
    except TemplateError as e:
        raise bad_request(str(e), "messages") from None
    return max(0, served.scheduler.n_ctx_seq - used - _reserve(served, req))


def _next_round(state: ServeState, model_id: str, request: Request, req: GenerationRequest, label: str,
                turn: DocumentsTurn, rounds: int) -> Callable[[Generation], Awaitable[Generation]]:
    """What starts the answer after one that ended with search calls only: the calls answered by the
    search (within half the room left), the answer and the results appended, the model asked again (the
    same model, leased again). After `MAX_SEARCH_ROUNDS` answers that could search, the tool is withdrawn."""

    async def then(gen: Generation) -> Generation:
        ended = gen.ended
        assert ended is not None
        calls = tuple(gen.splitter.calls)
        with await state.lease(model_id) as lease:
            served = state.served(lease.resident)
            m = ended.metrics
            room = served.scheduler.n_ctx_seq - m.prompt_tokens - m.completion_tokens - _reserve(served, req)
            results = await turn.answer(calls, _counter(served), max(0, room) // 2)
            messages = (*req.messages, Message("assistant", gen.splitter.answer_text, tool_calls=calls), *results)
            tools = req.tools
            if rounds >= MAX_SEARCH_ROUNDS:
                own = tuple(t for t in tools.tools if t.name != TOOL_NAME)
                tools = replace(tools, tools=own, choice=tools.choice if own else "none")
            nxt = replace(req, messages=messages, tools=tools)
            following = await _submit(served, request, nxt, label)
        following.documents = turn
        if rounds < MAX_SEARCH_ROUNDS:
            following.then = _next_round(state, model_id, request, nxt, label, turn, rounds + 1)
        return following
    return then


async def _submit(served: ServedModel, request: Request, req: GenerationRequest, label: str) -> Generation:
    chat = req.chat_request if req.kind == "chat" else None  # the turn as every backend takes it, built once
    compacted: dict[str, object] | None = None
    if chat is not None and req.compaction == "auto":  # a conversation past the threshold goes on from a summary
        chat, compacted = await compact(served.scheduler, served.chat, served.waker(), chat, req.sampling,
                                        client_of(request))
    # A request no grammar can apply to is spared the trip to a worker thread and back, time it waits
    # for its first token.
    constraint = None
    if chat is not None and chat.may_constrain:
        try:  # a schema that makes no grammar is the client's to fix; pricing it may take ~0.1 s: off the loop
            constraint = await anyio.to_thread.run_sync(served.chat.constraint, chat)
        except GrammarError as e:
            raise bad_request(str(e), "response_format" if req.tools.response_format else "tools") from None
    text, prompt = await build_prompt(served, req, chat)
    stream = EventStream(served.waker(), tokens=req.stream)
    stream.on_end = lambda m: note_tokens(request.scope, m.prompt_tokens, m.completion_tokens)
    sampling = req.sampling
    if req.kind == "chat":  # the chat format's turn markers end the answer, written as text too
        sampling = replace(sampling, stop=served.chat.stops(sampling))
    if sampling.max_tokens > served.scheduler.n_ctx_seq:
        sampling = replace(sampling, max_tokens=served.scheduler.n_ctx_seq)
    thinking = served.chat.thinking_limit(text, chat) if chat is not None else None
    handle = submit(served.model, prompt, sampling, stream, label, client_of(request), constraint, thinking)
    splitter = served.chat.reader(text, as_written=True, request=chat) if chat is not None else plain_reader()
    return Generation(handle, stream, splitter, compacted, len(prompt))


async def build_prompt(served: ServedModel, req: GenerationRequest,
                       chat_request: ChatRequest | None) -> tuple[str, list[int]]:
    """The prompt's text and tokens (a chat's, or a completion's prompt), refused as soon as it cannot
    fit. A small one is built on the loop (`PromptBounds.inline`); the rest on worker threads, a few at
    once (across every model)."""
    bounds, chat = served.bounds, served.chat

    def build() -> tuple[str, list[int]]:
        text = chat.text_of(chat_request) if chat_request is not None else req.prompt
        bounds.check_text(text)
        if chat_request is None or not req.images:
            return text, chat.tokenize(text)
        images = images_of(chat_request.messages)
        return text, tokenize_with_images(text, True, chat.tokenize, images, served.scheduler.projector)

    if chat_request is not None:
        size = bounds.check_messages(chat_request.messages)
        small = not req.images and not chat_request.offered_tools and bounds.inline(size)
    else:
        small = bounds.inline_text(req.prompt)
    try:
        if small:
            with bounds.inline_build():
                return build()
        async with bounds.builds():
            return await anyio.to_thread.run_sync(build)
    except TemplateError as e:
        raise bad_request(str(e), "messages") from None
    except EngineError as e:  # the projector refused an image
        raise bad_request(f"An image could not be read: {e}.", "messages") from None


def client_of(request: Request) -> str:
    """Whose conversation a request continues: the key it presents (`Authorization: Bearer`, or
    Anthropic's `x-api-key`), hashed, so clients with different keys never share a cached prefix;
    clients that send none share one."""
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else request.headers.get("x-api-key", "").strip()
    return "client:" + hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()[:32]


async def with_images(served: ServedModel, state: ServeState, request: Request,
                       req: GenerationRequest) -> GenerationRequest:
    """The request with its images read and checked (refused in words for a model without a projector)."""
    if not req.images:
        return req
    messages = await attach_images(req.messages, req.images, served.scheduler.projector is not None,
                                   state.allow_remote_images, decoder=state.images, receive=request.receive)
    return replace(req, messages=messages)
