"""The server's core, which knows no dialect: a checked request in, the engine's events out.

Each dialect (openai/, anthropic/) parses its bodies into a `GenerationRequest`, leases the model
it names (`ServeState.lease`), and calls `start`: the turn is rendered with the model's `ModelChat`,
priced and refused before it costs anything (`cost_bounds.py`), constrained (a required call, a JSON
answer), submitted to the model's `BatchScheduler`, and its events come back on the event loop
(`generate.EventStream`). The `Generation` it returns is all a dialect needs to write its reply
or its stream: the events, the reader that splits them into thinking, answer and tool calls, and
the handle that cancels the request. Finish reasons, usage figures and calls are the engine's own;
each dialect words them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import anyio.to_thread
from starlette.requests import Request

from prefill.engine.batch.request import BatchEvent, Failed, RequestHandle
from prefill.engine.errors import EngineError, GrammarError, TemplateError
from prefill.engine.events import Finished, Token
from prefill.engine.message import Message, ToolCall, images_of
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.model_chat import plain_reader
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.engine.settings import ServeSampling
from prefill.engine.vision.prompt_images import tokenize_with_images
from prefill.pool.pool import Lease
from prefill.server.access_log import note_tokens
from prefill.server.compaction import compact
from prefill.server.errors import bad_request
from prefill.server.generate import EventStream, submit
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

    @property
    def chat_request(self) -> ChatRequest:
        """A chat's turn as every backend takes it."""
        t = self.tools
        return ChatRequest(self.messages, self.sampling, options=self.options, tools=t.tools, tool_choice=t.choice,
                           response_format=t.response_format, parallel_tool_calls=t.parallel)


@dataclass
class Generation:
    """One request on its way through the scheduler, as a dialect writes it out.

    Attributes:
        handle: cancels the request (its slot is free at the scheduler's next step).
        stream: the engine's events on the event loop (`Token`, then `Finished` or `Failed`).
        splitter: the answer's reader: thinking apart from the answer, tool calls taken out.
        compacted: what `compaction: auto` did (None: nothing).
        prompt_tokens: the prompt's length, known before its prefill.
    """

    handle: RequestHandle
    stream: EventStream
    splitter: AnswerSplit
    compacted: dict[str, object] | None = None
    prompt_tokens: int = 0  # the prompt's length, known before its prefill

    def read(self, events: list[BatchEvent]) -> Step:
        """What a batch of events (`stream.batches()`) says, split for a stream: the tokens' thinking and
        answer, piled up (and what the reader held back, at the end), the calls finished in them, and
        the end (`Finished` or `Failed`) if it came."""
        texts = [ev.text for ev in events if type(ev) is Token]
        reasoning, content = self.splitter.split("".join(texts)) if texts else ("", "")
        end = events[-1]
        if isinstance(end, Finished):
            more_reasoning, more = self.splitter.finish("", end.reason)
            reasoning, content = reasoning + more_reasoning, content + more
        return Step(reasoning, content, self.splitter.new_calls(), end if isinstance(end, Finished | Failed) else None)


@dataclass(frozen=True)
class Step:
    """One batch of a streamed answer (`Generation.read`)."""

    reasoning: str
    content: str
    calls: list[ToolCall]
    end: Finished | Failed | None  # None: more to come


async def start(served: ServedModel, lease: Lease, request: Request, req: GenerationRequest,
                label: str) -> Generation:
    """Render, price, constrain and submit `req` on `served` (leased by `lease`); `label` names it in
    the slots table. The request is counted by the model's `ChatModel` until it ends, so the lease may
    end when this returns.

    Raises:
        ApiError: 400 for what the request asks that this model cannot do (a token it does not have,
            a schema that makes no grammar, a prompt past its context), 429 and 503 from the scheduler.
    """
    n_vocab = served.chat.runtime.n_vocab
    unknown = [t for t, _ in req.sampling.logit_bias if t >= n_vocab]
    if unknown:
        raise bad_request(f"'logit_bias' names token {unknown[0]}, which this model does not have "
                          f"(its tokens are 0 to {n_vocab - 1}).", "logit_bias")
    chat = req.chat_request if req.kind == "chat" else None  # the turn as every backend takes it, built once
    compacted: dict[str, object] | None = None
    if chat is not None and req.compaction == "auto":  # a conversation past the threshold goes on from a summary
        chat, compacted = await compact(served.scheduler, served.chat, served.waker(), chat, req.sampling,
                                        client_of(request))
    try:  # a schema that makes no grammar is the client's to fix; pricing it may take ~0.1 s: off the loop
        constraint = await anyio.to_thread.run_sync(served.chat.constraint, chat) if chat is not None else None
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
    fit; a few are built at once (across every model)."""
    bounds, chat = served.bounds, served.chat

    def build() -> tuple[str, list[int]]:
        text = chat.text_of(chat_request) if chat_request is not None else req.prompt
        bounds.check_text(text)
        if chat_request is None or not req.images:
            return text, chat.tokenize(text)
        images = images_of(chat_request.messages)
        return text, tokenize_with_images(text, True, chat.tokenize, images, served.scheduler.projector)

    if chat_request is not None:
        bounds.check_messages(chat_request.messages)
    async with bounds.builds():
        try:
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
