"""A `Generation` fed scripted engine events, for testing a dialect's stream without a model."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from prefill.engine.batch.request import BatchRequest, RequestHandle
from prefill.engine.message import ToolCall
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.model_chat import plain_reader
from prefill.engine.settings import ServeSampling
from prefill.server.core import Generation
from prefill.server.generate import EventStream
from prefill.server.loop_waker import LoopWaker


def scripted_generation(events: Sequence[object], calls: Sequence[ToolCall] = (),
                        splitter: AnswerSplit | None = None) -> Generation:
    """A request whose events have all arrived (on the running loop); `calls` as its reader took them out."""
    stream = EventStream(LoopWaker(asyncio.get_running_loop()))
    handle = RequestHandle(BatchRequest((1,), ServeSampling(), stream.sink), lambda: None)
    splitter = splitter or plain_reader()
    splitter.calls.extend(calls)
    for ev in events:
        stream.sink(ev)  # type: ignore[arg-type]
    stream.waker.step_done(idle=True)
    return Generation(handle, stream, splitter, prompt_tokens=12)
