"""Compaction for clients that ask for it: the `compaction` extension field of a chat request.

With `"compaction": "auto"`, a conversation whose prompt (and room for the answer) passes the
compaction threshold of a slot's context is first summarised by the model (engine/prompt/compaction.py:
the conversation's own prompt plus an instruction, so the slot that holds the conversation reads
only the instruction), and the request is answered from the system prompt with the summary under it
and the turns after the last answer (the new question, or tool results). The reply carries what was
done as `compaction` (the summary, turns folded, tokens before and after), so a client can keep the
summary in its history in place of the turns. Without the field nothing changes: a request that does
not fit is refused as before.
"""

from __future__ import annotations

import time
from dataclasses import replace

import anyio

from prefill.engine.batch.request import Failed
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.errors import TemplateError
from prefill.engine.events import Finished
from prefill.engine.message import Message
from prefill.engine.prompt.compaction import Summary, due, model_view, summary_request, system_with
from prefill.engine.prompt.model_chat import ModelChat
from prefill.engine.prompt.overflow import fit_messages
from prefill.engine.request import ChatRequest
from prefill.engine.settings import ServeSampling
from prefill.server.errors import bad_request, server_error
from prefill.server.generate import EventStream, submit
from prefill.server.loop_waker import LoopWaker


def _split(messages: tuple[Message, ...]) -> tuple[list[Message], list[Message]]:
    """(the conversation up to its last answer, the messages after it: the turn being asked)."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return list(messages[: last + 1]), list(messages[last + 1 :])


async def compact(scheduler: BatchScheduler, model: ModelChat, waker: LoopWaker, chat: ChatRequest,
                  sampling: ServeSampling, owner: str) -> tuple[ChatRequest, dict[str, object] | None]:
    """`chat` as it is answered: unchanged where it fits a slot of `scheduler`, else from a summary
    of its earlier turns (and what was done, for the reply's `compaction` field). The summary is
    asked for as `owner`, so the slot that holds the conversation reuses it."""
    n_ctx = scheduler.n_ctx_seq
    head, tail = _split(chat.messages)
    if not any(m.role == "assistant" for m in head) or not tail:
        return chat, None
    try:  # a conversation too long to render (the sandbox's output or time) is the client's to shorten
        before = len((await anyio.to_thread.run_sync(model.prompt, chat))[1])
    except TemplateError as e:
        raise bad_request(str(e), "messages") from None
    if not due("summarise", before + min(sampling.max_tokens, n_ctx // 4), n_ctx):
        return chat, None
    began = time.perf_counter()
    ask = summary_request(chat.with_messages(head), n_ctx)

    def build() -> tuple[str, list[int]]:
        fitted = fit_messages(ask.messages, lambda ms: len(model.prompt(ask.with_messages(ms))[1]), n_ctx,
                              ask.sampling.max_tokens, "rolling_window")
        return model.prompt(ask.with_messages(fitted.messages))

    try:
        text, prompt = await anyio.to_thread.run_sync(build)
    except TemplateError as e:
        raise bad_request(str(e), "messages") from None
    stream = EventStream(waker, tokens=False)
    asked = replace(sampling, max_tokens=ask.sampling.max_tokens, temperature=ask.sampling.temperature,
                    stop=model.stops(ask.sampling))
    handle = submit(scheduler, prompt, asked, stream, "summary", owner,
                    thinking=model.thinking_limit(text, ask))
    end: Finished | None = None
    try:
        async for events in stream.batches():
            for ev in events:
                if isinstance(ev, Failed):
                    raise server_error(f"The conversation could not be summarised: {ev.message}")
                if isinstance(ev, Finished):
                    end = ev
            if end is not None:
                break
    finally:
        handle.cancel()
    if end is None:
        return chat, None
    summary = model.reader(text, request=ask).finish(end.text)[1].strip()
    if not summary:
        return chat, None  # nothing written: answered as it stands (refused if it does not fit)
    system = next((m.content for m in head if m.role == "system"), "")
    compacted = chat.with_messages(model_view(system, summary, tail))
    after = len((await anyio.to_thread.run_sync(model.prompt, chat.with_messages([system_with(system, summary)])))[1])
    done = Summary(summary, len([m for m in head if m.role != "system"]), sum(m.role == "user" for m in head),
                   before, after, (time.perf_counter() - began) * 1000, end.metrics.completion_tokens)
    return compacted, {"summary": summary, **done.as_dict()}
