"""Cost before work: what a request may cost the server, checked before it is paid.

A prompt longer than a slot is refused in any case; these bounds refuse it before the
expensive steps, not after them. The body is read up to a size that follows the context, and
must arrive at a minimum rate;
the messages are counted against the context before the template renders them; the prompt
text is measured before it is tokenized; and only a few prompts are built at once, so a
flood of large requests cannot take the GIL from the decoding thread (a small one is built on the
loop, where it costs less than the trip to a worker thread).

The bounds are sound: a prompt refused here could never have fit. No token stands for more
text than the vocabulary's longest piece, so a text of B bytes is at least B / longest tokens,
and every message costs at least one token in every chat format.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from starlette.requests import ClientDisconnect, Request

from prefill.engine.message import Message
from prefill.server.errors import ApiError, bad_request, context_exceeded, too_large

BODY_BYTES_PER_TOKEN = 32  # JSON escapes included: a token's text is rarely more than a dozen bytes
BODY_SLACK_BYTES = 64 * 1024  # the request's other fields
PROMPT_BUILDS = 2  # prompts rendered and tokenized at once; the rest wait their turn
# A prompt of at most INLINE_BUILD_BYTES of text, with no image and no tool, is built on the loop: its
# render and tokenize take ~0.2 ms, less than the trip to a worker thread and back, which its first
# token waited for (~0.5 ms on this 2-core host). A model whose template makes such builds take more
# than INLINE_BUILD_S of the loop's CPU, INLINE_SLOW_BUILDS times in a row, builds every later prompt on
# a worker thread, as larger prompts are (one slow build alone is the first, or a cold cache).
INLINE_BUILD_BYTES = 4096
INLINE_BUILD_S = 0.002
INLINE_SLOW_BUILDS = 3
# A body must keep arriving, or its connection is closed (connections.py): t seconds after its
# headers, at least BODY_MIN_BYTES_S * (t - BODY_GRACE_S) bytes of it. So a body of n bytes has
# BODY_GRACE_S + n / BODY_MIN_BYTES_S to arrive: 9 s for the largest a 2,048-token slot reads
# (body_limit, 128 KiB), and 1,024 s more for the 32 MiB a model that reads images adds. The grace
# covers a client that waits for its "100 Continue" and TCP's slow start; 32 KiB/s (256 kbit/s) is
# below any link a person sends prompts over, and makes each second a connection is held cost its
# client 32 KiB sent.
BODY_GRACE_S = 5.0
BODY_MIN_BYTES_S = 32 * 1024
# Embeddings and reranking (server/embeddings): one request's inputs, bounded before the model works on
# them. The count and the body are checked before the model is leased (or loaded); the tokens once the
# inputs are tokenized, before any is evaluated. The inputs are then evaluated EMBED_PART at a time, each
# part a turn of its own on the server's one embedding turn, so a large request does not hold it whole.
EMBED_MAX_INPUTS = 2048  # texts or token arrays in one request, documents in one rerank (OpenAI's bound)
EMBED_MAX_TOKENS = 300_000  # tokens in one request, every input together (OpenAI's bound)
EMBED_BODY_BYTES = 8 * 2**20  # 2,048 inputs of 4 KB: 256 s to arrive at the slowest pace allowed
EMBED_PART = 64  # inputs evaluated in one turn: at most one llama.cpp batch (engine/embed MAX_SEQUENCES)


def body_limit(n_ctx_seq: int) -> int:
    """The largest request body worth reading for a slot of `n_ctx_seq` tokens."""
    return BODY_SLACK_BYTES + BODY_BYTES_PER_TOKEN * n_ctx_seq


class PromptBounds:
    """The context of a slot and the longest token of the model, for sound early refusals."""

    def __init__(self, n_ctx_seq: int, longest_token_bytes: int, builds: asyncio.Semaphore | None = None):
        self.n_ctx = n_ctx_seq
        self.longest = max(1, longest_token_bytes)
        self._builds = builds  # shared by the models of one server: PROMPT_BUILDS in all
        self._slow = 0  # small builds in a row that took longer than INLINE_BUILD_S

    def check_messages(self, messages: Sequence[Message]) -> int:
        """Refuse a chat that cannot fit, before its template renders it; its bytes of text if it may.

        Raises:
            ApiError: 400 context_length_exceeded.
        """
        if len(messages) > self.n_ctx:
            raise self._exceeded(f"{len(messages)} messages (each takes at least one token)")
        size = sum(len(m.content.encode("utf-8")) + len(m.reasoning.encode("utf-8")) for m in messages)
        if size > self.n_ctx * self.longest:
            raise self._exceeded(f"at least {self._min_tokens(size)} tokens ({size} bytes of text)")
        return size

    def check_text(self, text: str) -> None:
        """Refuse prompt text that cannot fit, before it is tokenized.

        Raises:
            ApiError: 400 context_length_exceeded.
        """
        size = len(text.encode("utf-8"))
        if size > self.n_ctx * self.longest:
            raise self._exceeded(f"at least {self._min_tokens(size)} tokens ({size} bytes of text)")

    def builds(self) -> asyncio.Semaphore:
        """The turns for building prompts, made on the serving loop."""
        if self._builds is None:
            self._builds = asyncio.Semaphore(PROMPT_BUILDS)
        return self._builds

    def inline(self, size: int) -> bool:
        """Whether a prompt of `size` bytes of text (no image, no tool) is built on the loop."""
        return self._slow < INLINE_SLOW_BUILDS and size <= INLINE_BUILD_BYTES

    def inline_text(self, text: str) -> bool:
        """Whether a completion's prompt `text` is built on the loop (a long one is not encoded there to be
        measured: its bytes are at least its characters)."""
        return len(text) <= INLINE_BUILD_BYTES and self.inline(len(text.encode("utf-8", "surrogatepass")))

    @contextmanager
    def inline_build(self) -> Iterator[None]:
        """Times a build on the loop: INLINE_SLOW_BUILDS in a row past INLINE_BUILD_S send this model's
        builds to worker threads for good."""
        started = time.thread_time()  # the build's own work: not the GIL's waits for the decoding thread
        try:
            yield
        finally:
            self._slow = self._slow + 1 if time.thread_time() - started > INLINE_BUILD_S else 0

    def _min_tokens(self, size: int) -> int:
        return -(-size // self.longest)

    def _exceeded(self, what: str) -> ApiError:
        return context_exceeded(
            f"This model's context is {self.n_ctx} tokens per request; the prompt is {what}, "
            "leaving no room for an answer. Shorten the prompt or start the server with a larger --ctx.")


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 past `limit` bytes whether or not Content-Length says so."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise bad_request("Content-Length is not a number.")
        if int(declared) > limit:
            raise too_large(limit)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ApiError(499, "The client closed the request.") from None
    return b"".join(chunks)
