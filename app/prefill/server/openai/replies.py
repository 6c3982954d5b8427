"""OpenAI's replies from the core's events: a chat or text completion's SSE stream, or its one body."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request

from prefill.engine.batch.request import Failed, RequestHandle
from prefill.engine.events import Finished, Token
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.server.errors import server_error
from prefill.server.generate import EventStream, finished
from prefill.server.openai.shapes import SSE_DONE, Reply, sse


async def stream_reply(reply: Reply, handle: RequestHandle, stream: EventStream,
                       splitter: AnswerSplit, include_usage: bool) -> AsyncIterator[str]:
    """The SSE body: a first chunk, then the text, the last chunk with the finish reason,
    the usage chunk when asked, then [DONE]. A failure is sent as an error event.

    The text of all the tokens that arrived together goes in one chunk: nothing is held back,
    but a loop (or a client) that fell behind catches up with one write instead of one per token.
    """
    try:
        if reply.kind == "chat":
            yield sse(reply.chunk(first=True))
        n_calls = 0
        async for events in stream.batches():
            texts = [ev.text for ev in events if type(ev) is Token]
            out = [reply.text_chunk(*splitter.split("".join(texts)))] if texts else []
            end = events[-1]
            if isinstance(end, Finished):
                reasoning, content = splitter.finish("", end.reason)
                out.append(reply.text_chunk(reasoning, content))
            calls = splitter.new_calls()
            if calls:
                out.append(reply.tool_call_chunks(calls, n_calls))
                n_calls += len(calls)
            if isinstance(end, Finished):
                out.append(sse(reply.chunk(reason=splitter.final_reason(end.reason), m=end.metrics)))
                if include_usage:
                    out.append(sse(reply.usage_chunk(end.metrics)))
                out.append(SSE_DONE)
            elif isinstance(end, Failed):
                out.append(sse(server_error(end.message).body()))
                out.append(SSE_DONE)
            body = "".join(out)
            if body:
                yield body
            if isinstance(end, (Finished, Failed)):
                return
    finally:
        handle.cancel()  # a no-op once finished; frees the slot when the client went away


async def full_reply(reply: Reply, handle: RequestHandle, stream: EventStream,
                     splitter: AnswerSplit, request: Request) -> dict[str, object]:
    """The non-streamed body. A client that disconnects while waiting cancels the request."""
    ev = await finished(handle, stream, request)
    reasoning, content = splitter.finish(ev.text, ev.reason)
    return reply.full(content, reasoning, ev.reason, ev.metrics, splitter.calls)
