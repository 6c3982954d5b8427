"""OpenAI's replies from the core's events: a chat or text completion's SSE stream, or its one body."""

from __future__ import annotations

from starlette.requests import Request

from prefill.engine.batch.request import Failed
from prefill.engine.events import Finished
from prefill.server.core import Generation, Step
from prefill.server.errors import server_error
from prefill.server.openai.shapes import SSE_DONE, Reply, sse


class ChatChunks:
    """OpenAI's streamed chunks of a chat or text completion (a `StepWriter`): a first chunk, the text of
    each batch of tokens in one chunk, the calls they finished, then the last chunk with the finish reason
    (and, with documents, the `sources`), the usage chunk when asked, and [DONE]; a failure is an error event."""

    def __init__(self, reply: Reply, gen: Generation, include_usage: bool):
        self.reply, self.gen, self.include_usage = reply, gen, include_usage
        self.n_calls = 0

    def head(self) -> str:
        return sse(self.reply.chunk(first=True)) if self.reply.kind == "chat" else ""

    def step(self, step: Step) -> str:
        out = self.reply.text_chunk(step.reasoning, step.content)
        if step.calls:
            out += self.reply.tool_call_chunks(step.calls, self.n_calls)
            self.n_calls += len(step.calls)
        return out

    async def last(self, end: Finished | Failed) -> str:
        if isinstance(end, Failed):
            return sse(server_error(end.message).body()) + SSE_DONE
        last = self.reply.chunk(reason=self.gen.final_reason(end.reason), m=end.metrics)
        last.update(self.gen.extension())
        out = sse(last)
        if self.include_usage:
            out += sse(self.reply.usage_chunk(end.metrics))
        return out + SSE_DONE


async def full_reply(reply: Reply, gen: Generation, request: Request) -> dict[str, object]:
    """The non-streamed body (with documents, its `sources`). A client that disconnects while waiting
    cancels the request."""
    done = await gen.whole(request)
    body = reply.full(done.content, done.reasoning, done.reason, done.end.metrics, done.calls)
    body.update(gen.extension())
    return body
