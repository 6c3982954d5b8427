"""Scheduler events crossing onto the server's event loop."""

from __future__ import annotations

import asyncio

from prefill.engine.events import Token
from prefill.server.generate import EventStream


def test_events_after_the_loop_closed_are_dropped_not_raised() -> None:
    # A server stopping with a stream in flight: the scheduler fails the request after uvicorn's loop closed.
    loop = asyncio.new_event_loop()
    stream = EventStream(loop)
    loop.close()
    stream.sink(Token("late", 1))  # raised RuntimeError("Event loop is closed") into the scheduler before


def test_events_arrive_in_order_in_batches() -> None:
    async def main() -> list[list[str]]:
        stream = EventStream(asyncio.get_running_loop())
        for i in range(3):
            stream.sink(Token(str(i), i + 1))
        batches = stream.batches()
        return [[e.text for e in await anext(batches)]]  # type: ignore[union-attr]

    assert asyncio.run(main()) == [["0", "1", "2"]]
