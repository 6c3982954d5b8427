"""The server's streaming path alone: the event loop's CPU per streamed chunk, no model.

A producer thread hands one token per wake-up, as the scheduler does at one client, through the
path a streamed Chat Completions answer takes in `prefill serve`: `EventStream` and `LoopWaker`,
`Generation`, `ChatChunks` and `stream_response` (the producer writes the chunks itself, as the
scheduler's thread does: direct_writes.py; with `--loop-only` the loop writes them),
`EventSourceResponse`, the server's own middleware (AccessLog, BrowserGuard), uvicorn with the guarded
h11 protocol, to a raw HTTP client in this process. Prints one JSON object: the loop thread's CPU time
per chunk (`time.thread_time` on the loop) and the producer's, the figures to set beside the loop's CPU
per token in `vs_llama_server.py --profile` (what the rest of a real server's loop costs: the requests,
and caches cooled by the decoding beside it).

    python benchmarks/sse_path_bench.py [--chunks 2000] [--gap-ms 2] [--loop-only]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

import uvicorn  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.routing import Route  # noqa: E402

from prefill.engine.batch.request import BatchRequest, RequestHandle  # noqa: E402
from prefill.engine.events import Finished, MetricsSnapshot, Token  # noqa: E402
from prefill.engine.prompt.model_chat import plain_reader  # noqa: E402
from prefill.engine.settings import ServeSampling  # noqa: E402
from prefill.server.access_log import AccessLog  # noqa: E402
from prefill.server.browser_guard import BrowserGuard  # noqa: E402
from prefill.server.connections import guarded_protocol  # noqa: E402
from prefill.server.core import Generation  # noqa: E402
from prefill.server.generate import EventSourceResponse, EventStream  # noqa: E402
from prefill.server.loop_waker import LoopWaker  # noqa: E402
from prefill.server.openai.replies import ChatChunks  # noqa: E402
from prefill.server.openai.shapes import Reply  # noqa: E402
from prefill.server.stream_body import stream_body, stream_response  # noqa: E402


def app(chunks: int, gap_s: float, cpu: dict[str, float], loop_only: bool) -> Starlette:
    async def endpoint(request: Request) -> EventSourceResponse:
        loop = asyncio.get_running_loop()
        waker = LoopWaker(loop, interval_s=0.0)  # every token its own wake-up, as at a CPU model's speed
        stream = EventStream(waker)
        handle = RequestHandle(BatchRequest((1,), ServeSampling(), stream.sink), lambda: None)
        gen = Generation(handle, stream, plain_reader(), prompt_tokens=12)

        def mark(key: str) -> None:
            loop.call_soon_threadsafe(lambda: cpu.__setitem__(key, time.thread_time()))

        def produce() -> None:
            time.sleep(0.05)
            mark("start")
            spent = 0.0
            for i in range(chunks):
                began = time.thread_time()
                stream.sink(Token("tok ", i + 1))
                waker.step_done()
                spent += time.thread_time() - began
                time.sleep(gap_s)
            cpu["producer"] = spent
            mark("end")
            stream.sink(Finished("length", "", MetricsSnapshot()))
            waker.step_done(idle=True)

        threading.Thread(target=produce, daemon=True).start()
        chunks_of = ChatChunks(Reply("chat", "m"), gen, False)
        if loop_only:
            return EventSourceResponse(stream_body(chunks_of), gen, 15.0)
        return stream_response(chunks_of, 15.0)

    return Starlette(routes=[Route("/v1/chat/completions", endpoint, methods=["POST"])],
                     middleware=[Middleware(AccessLog), Middleware(BrowserGuard, hosts=None, origins=(), shape=None)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--gap-ms", type=float, default=2.0, help="between tokens (a decoding step)")
    ap.add_argument("--loop-only", action="store_true",
                    help="every chunk written by the loop (no writes from the scheduler's thread)")
    args = ap.parse_args()
    cpu: dict[str, float] = {}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = app(args.chunks, args.gap_ms / 1000, cpu, args.loop_only)
    server = uvicorn.Server(uvicorn.Config(served, port=port, log_level="warning", access_log=False, lifespan="off",
                                           http=guarded_protocol()))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("POST", "/v1/chat/completions", b"{}", {"Content-Type": "application/json"})
    body = conn.getresponse()
    got = 0
    while True:
        line = body.fp.readline()  # type: ignore[union-attr]
        if not line or line.startswith(b"data: [DONE]"):
            break
        got += line.startswith(b"data: {")
    server.should_exit = True
    print(json.dumps({"chunks": got, "gap_ms": args.gap_ms,
                      "direct": not args.loop_only,
                      "loop_cpu_us_per_chunk": round((cpu["end"] - cpu["start"]) * 1e6 / args.chunks, 1),
                      "producer_cpu_us_per_chunk": round(cpu["producer"] * 1e6 / args.chunks, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
