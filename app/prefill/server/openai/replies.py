"""OpenAI's replies from the core's events: a chat or text completion's SSE stream, or its one body."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request

from prefill.engine.batch.request import Failed
from prefill.engine.events import Finished
from prefill.server.core import Generation
from prefill.server.errors import server_error
from prefill.server.openai.shapes import SSE_DONE, Reply, sse


async def stream_reply(reply: Reply, gen: Generation, include_usage: bool) -> AsyncIterator[str]:
    """The SSE body: a first chunk, then the text, the last chunk with the finish reason (and, with
    documents, the `sources`), the usage chunk when asked, then [DONE]. A failure is sent as an error event.

    The text of all the tokens that arrived together goes in one chunk: nothing is held back,
    but a loop (or a client) that fell behind catches up with one write instead of one per token.
    """
    try:
        if reply.kind == "chat":
            yield sse(reply.chunk(first=True))
        n_calls = 0
        async for events in gen.batches():
            step = gen.read(events)
            out = [reply.text_chunk(step.reasoning, step.content)]
            if step.calls:
                out.append(reply.tool_call_chunks(step.calls, n_calls))
                n_calls += len(step.calls)
            end = step.end
            if isinstance(end, Finished):
                last = reply.chunk(reason=gen.final_reason(end.reason), m=end.metrics)
                last.update(gen.extension())
                out.append(sse(last))
                if include_usage:
                    out.append(sse(reply.usage_chunk(end.metrics)))
                out.append(SSE_DONE)
            elif isinstance(end, Failed):
                out.append(sse(server_error(end.message).body()))
                out.append(SSE_DONE)
            body = "".join(out)
            if body:
                yield body
            if end is not None:
                return
    finally:
        gen.cancel()  # a no-op once finished; frees the slot when the client went away


async def full_reply(reply: Reply, gen: Generation, request: Request) -> dict[str, object]:
    """The non-streamed body (with documents, its `sources`). A client that disconnects while waiting
    cancels the request."""
    done = await gen.whole(request)
    body = reply.full(done.content, done.reasoning, done.reason, done.end.metrics, done.calls)
    body.update(gen.extension())
    return body
