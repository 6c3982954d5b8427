"""The streaming path's pieces without a model: text chunks, the loop's wake-ups, merged tokens."""

from __future__ import annotations

import asyncio
import json
import threading
import time

from prefill.engine.batch.request import BatchRequest, Failed, RequestHandle
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.prompt.model_chat import plain_reader
from prefill.engine.settings import ServeSampling
from prefill.server import loop_waker
from prefill.server.core import Generation
from prefill.server.direct_writes import DirectWrites
from prefill.server.generate import EventStream
from prefill.server.loop_waker import LoopWaker
from prefill.server.openai.replies import ChatChunks
from prefill.server.openai.shapes import Reply, sse
from prefill.server.stream_body import stream_body


def test_text_chunk_is_the_chunk_encoded_whole() -> None:
    for kind in ("chat", "completion"):
        reply = Reply(kind, 'model "\x00" é')  # a marker and a quote in the id must not move the text
        for text in ("hi", 'a "quoted" \\ line\n', "é ✓ \x00"):
            assert json.loads(reply.text_chunk("", text)[6:]) == json.loads(sse(reply.chunk(text))[6:])
        assert reply.text_chunk("", "") == ""
        assert json.loads(reply.text_chunk("why", "so")[6:]) == reply.chunk("so", "why")


class Counter:
    def __init__(self) -> None:
        self.woken = 0
        self.done = asyncio.Event()

    def wake(self) -> None:
        self.woken += 1
        self.done.set()


def _step(waker: LoopWaker, streams: list[Counter], urgent: bool = False) -> None:
    """What a scheduler step does: events for some streams, then the step's end."""
    for s in streams:
        waker.notify(s, urgent)
    waker.step_done()


def _wake_from_thread(use_pipe: bool) -> list[int]:
    async def main() -> list[int]:
        waker = LoopWaker(asyncio.get_running_loop())
        assert (waker._pipe is not None) == use_pipe
        streams = [Counter() for _ in range(4)]
        t = threading.Thread(target=_step, args=(waker, streams))
        t.start()
        t.join()
        await asyncio.gather(*(s.done.wait() for s in streams))
        return [s.woken for s in streams]

    return asyncio.run(main())


def test_loop_waker_wakes_every_stream_of_a_step_from_another_thread() -> None:
    assert _wake_from_thread(use_pipe=loop_waker._write is not None) == [1, 1, 1, 1]


def test_loop_waker_without_the_pipe_uses_call_soon_threadsafe(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(loop_waker, "_write", None)
    assert _wake_from_thread(use_pipe=False) == [1, 1, 1, 1]


def test_loop_waker_wakes_only_at_a_steps_end() -> None:
    async def main() -> tuple[int, int]:
        waker = LoopWaker(asyncio.get_running_loop())
        s = Counter()
        waker.notify(s, urgent=True)
        await asyncio.sleep(0.02)
        before = s.woken  # noted, but the step has not ended: the loop is left alone
        waker.step_done()
        await s.done.wait()
        return before, s.woken

    assert asyncio.run(main()) == (0, 1)


def test_loop_waker_holds_tokens_to_the_interval_but_not_urgent_events_or_idle() -> None:
    async def main() -> list[int]:
        waker = LoopWaker(asyncio.get_running_loop(), interval_s=60)  # no interval passes in this test
        seen = []
        for urgent, idle in ((False, False), (False, False), (True, False), (False, False), (False, True)):
            s = Counter()
            waker.notify(s, urgent)
            waker.step_done(idle)
            await asyncio.sleep(0.02)
            seen.append(s.woken)
            while waker._ready:  # one held back goes along with the next wake-up; keep the cases apart
                waker._ready.popleft()
        return seen

    # the first pass is due at once; the next token within the interval waits; an urgent event
    # (the first token, the end) and an idle scheduler go at once
    assert asyncio.run(main()) == [1, 0, 1, 0, 1]


def test_loop_waker_interval_passes_by_the_schedulers_steps() -> None:
    async def main() -> float:
        waker = LoopWaker(asyncio.get_running_loop(), interval_s=0.05)
        first, second = Counter(), Counter()
        t0 = time.perf_counter()
        _step(waker, [first])
        await first.done.wait()
        stepping = True

        def steps() -> None:  # a scheduler stepping every millisecond, with a token for `second` each time
            while stepping:
                _step(waker, [second])
                time.sleep(0.001)

        t = threading.Thread(target=steps)
        t.start()
        await second.done.wait()
        stepping = False
        t.join()
        return time.perf_counter() - t0

    assert asyncio.run(main()) >= 0.05  # the second pass waited for the end of the interval


def test_events_after_the_loop_closed_are_dropped_not_raised() -> None:
    # A server stopping with a stream in flight: the scheduler fails the request after uvicorn's loop closed.
    loop = asyncio.new_event_loop()
    loop.close()
    waker = LoopWaker(loop)
    EventStream(waker).sink(Token("late", 1))
    waker.step_done(idle=True)  # raised RuntimeError into the scheduler before


def _sse_events(body: str) -> list[object]:
    return [json.loads(e[6:]) if e != "data: [DONE]" else "[DONE]" for e in body.split("\n\n") if e]


def _collect(events: list[object]) -> tuple[list[str], RequestHandle]:
    async def main() -> tuple[list[str], RequestHandle]:
        stream = EventStream(LoopWaker(asyncio.get_running_loop()))
        handle = RequestHandle(BatchRequest((1,), ServeSampling(), stream.sink), lambda: None)
        for ev in events:  # all there before the response reads any: they pile up
            stream.sink(ev)  # type: ignore[arg-type]
        stream.waker.step_done(idle=True)
        gen = Generation(handle, stream, plain_reader())
        return [b async for b in stream_body(ChatChunks(Reply("chat", "m"), gen, True))], handle

    return asyncio.run(main())


def test_tokens_that_piled_up_go_out_as_one_chunk() -> None:
    m = MetricsSnapshot(completion_tokens=3)
    bodies, handle = _collect([PrefillDone(5, 0, 5, 1.0), Token("a", 1), Token(" b", 2), Token(" c", 3),
                               Finished("length", "a b c", m)])
    events = _sse_events("".join(bodies))
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}  # type: ignore[index]
    assert events[1]["choices"][0]["delta"] == {"content": "a b c"}  # type: ignore[index]
    assert events[2]["choices"][0]["finish_reason"] == "length"  # type: ignore[index]
    assert events[3]["usage"]["completion_tokens"] == 3  # type: ignore[index]
    assert events[4] == "[DONE]"
    assert handle.cancelled  # the slot is let go whatever way the stream ends


def test_a_failure_after_tokens_sends_the_text_then_the_error() -> None:
    bodies, _ = _collect([Token("a", 1), Failed("boom")])
    events = _sse_events("".join(bodies))
    assert events[1]["choices"][0]["delta"] == {"content": "a"}  # type: ignore[index]
    assert "boom" in events[2]["error"]["message"]  # type: ignore[index]
    assert events[3] == "[DONE]"


def test_the_prefills_event_leaves_a_stream_with_the_scheduler_thread() -> None:
    """No reply says when the prompt was read: its event must not take the stream back to the loop just
    before the first token, which the scheduler thread then writes itself (direct_writes.py)."""
    async def main() -> None:
        stream = EventStream(LoopWaker(asyncio.get_running_loop()))
        direct = stream.direct = DirectWrites(None, stream._pending, lambda events: "")  # type: ignore[arg-type]
        direct.on = True  # armed: the loop had nothing left to write
        stream.sink(PrefillDone(5, 0, 5, 1.0))
        assert direct.on and not stream._pending
        stream.sink(Token("a", 1))
        assert direct.on and list(stream._pending) == [Token("a", 1)]  # the scheduler thread's to write

    asyncio.run(main())
