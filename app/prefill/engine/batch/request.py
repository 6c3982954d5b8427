"""A request to the batched scheduler, its handle, and the events it receives.

The scheduler thread delivers events through the request's `sink`, in order:
PrefillDone, Token…, then exactly one of Finished or Failed. A sink must not
block (it runs on the thread that decodes every slot): hand the event over and return.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from prefill.engine.events import Finished, PrefillDone, Token
from prefill.engine.llama.grammar_sampler import Constraint
from prefill.engine.metrics import RequestClock
from prefill.engine.prompt.thinking_budget import ThinkingLimit
from prefill.engine.settings import ServeSampling


@dataclass(frozen=True)
class Failed:
    """The request could not be served (llama.cpp refused a batch, the scheduler stopped)."""

    message: str


BatchEvent = PrefillDone | Token | Finished | Failed
Sink = Callable[[BatchEvent], None]

_ids = itertools.count(1)


@dataclass(frozen=True)
class BatchRequest:
    """Prompt tokens to continue, how to sample, and where events go."""

    prompt: tuple[int, ...]
    sampling: ServeSampling
    sink: Sink
    label: str = ""  # shown in slot snapshots (a request id, "chat"…)
    owner: str = ""  # whose conversation: a cached prefix is reused only for the same owner
    constraint: Constraint | None = None  # a grammar the answer must follow (tool calls, a JSON format)
    thinking: ThinkingLimit | None = None  # a budget for a reasoning model's thinking


class RequestHandle:
    """What `BatchScheduler.submit` returns: the request's id and a way to cancel it.

    Cancelling is cooperative: the scheduler sees it before its next step (a few ms)
    and frees the slot, or drops the request from the queue.
    """

    def __init__(self, request: BatchRequest, wake: Callable[[], None]):
        self.id = next(_ids)
        self.request = request
        self.clock = RequestClock()  # from submission: queueing counts in the time to first token
        self._cancel = threading.Event()
        self._wake = wake

    def cancel(self) -> None:
        self._cancel.set()
        self._wake()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()
