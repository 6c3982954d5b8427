"""The window's answer to one tool call, carried from the GUI thread to the engine thread.

The tool loop runs on the engine thread and asks `approve(call)`, which must block until the
person answers. `ApprovalGate.ask` emits the question (a queued signal to the GUI thread) and
waits on a queue for the answer; the GUI thread only ever puts an answer (`answer`), so it never
waits. Stop (the turn's cancel event) ends the wait with DENY. Each question has a serial
number, so an answer meant for an earlier question (a late click) is never taken for a later one.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable

from prefill.engine.message import ToolCall
from prefill.session.tool_loop import Decision

POLL_S = 0.05  # how often a waiting question looks at Stop


class ApprovalGate:
    """One question at a time, from the engine thread to the person; thread-safe."""

    def __init__(self) -> None:
        self._answers: queue.Queue[tuple[int, Decision]] = queue.Queue()
        self._serials = itertools.count(1)
        self._lock = threading.Lock()
        self._asking = 0  # the serial of the question waiting now (0: none)

    def ask(self, call: ToolCall, show: Callable[[int, ToolCall], None], cancel: threading.Event | None) -> Decision:
        """Show `call` (through `show(serial, call)`) and wait for the answer; DENY once `cancel` is set."""
        with self._lock:
            serial = self._asking = next(self._serials)
        try:
            show(serial, call)
            while True:
                if cancel is not None and cancel.is_set():
                    return Decision.DENY
                try:
                    got, decision = self._answers.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                if got == serial:
                    return decision
        finally:
            with self._lock:
                self._asking = 0

    def answer(self, serial: int, decision: Decision) -> None:
        """The person's answer to question `serial` (from any thread; never blocks)."""
        self._answers.put((serial, decision))

    @property
    def asking(self) -> int:
        """The serial of the question waiting for an answer (0: none)."""
        with self._lock:
            return self._asking

