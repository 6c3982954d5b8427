"""Load on a running `prefill serve`: N clients streaming chat completions for a bounded time.

Each client (a thread with the official `openai` client, from the test extra, or a raw
`http.client` reader) sends one streamed request after another until the deadline; every
request started is recorded as answered completely or failed with an error, so none can be
lost silently. The raw reader exists for throughput comparisons on small machines: the
`openai` client builds a pydantic object per chunk (about 0.35 ms of CPU per token here),
CPU taken from the cores the server decodes on, which a lean loop being compared has to itself.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from prefill.engine.metrics import percentile

WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "the", "server",
         "batches", "every", "token")


def prompt_text(n: int, words: int = 48) -> str:
    """A distinct prompt per request: the number leads, so no slot's cache shares its prefix."""
    return f"{n} " + " ".join(WORDS[(n + i) % len(WORDS)] for i in range(words))


@dataclass
class Outcome:
    client: int
    complete: bool = False  # finish reason, usage chunk and every token arrived
    error: str = ""
    finish: str = ""
    tokens: int = 0  # usage.completion_tokens
    chunks: int = 0  # text chunks received
    ttft_s: float = 0.0
    server_decode_tps: float = 0.0  # the server's own figure for the request (timings)
    start: float = 0.0
    first: float = 0.0
    last: float = 0.0  # the latest text chunk's arrival
    end: float = 0.0
    gaps_ms: list[float] = field(default_factory=list)  # between text chunks, as the client sees them

    def text_chunk(self) -> None:
        now = time.perf_counter()
        if self.chunks:
            self.gaps_ms.append((now - self.last) * 1000)
        else:
            self.first = now
        self.last = now
        self.chunks += 1


@dataclass
class LoadReport:
    clients: int
    duration_s: float
    outcomes: list[Outcome] = field(default_factory=list)
    started: int = 0

    @property
    def lost(self) -> int:
        return self.started - len(self.outcomes)

    def figures(self) -> dict[str, object]:
        done = [o for o in self.outcomes if o.complete]
        ttft = sorted(o.ttft_s * 1000 for o in done)
        wall = (max(o.end for o in self.outcomes) - min(o.start for o in self.outcomes)) if self.outcomes else 0
        tokens = sum(o.tokens for o in done)
        per_request = sorted((o.tokens - 1) / (o.end - o.first) for o in done if o.tokens > 1 and o.end > o.first)
        gaps = sorted(g for o in done for g in o.gaps_ms)
        chunks = sum(o.chunks for o in done)
        return {
            "clients": self.clients, "duration_s": self.duration_s, "requests": self.started,
            "complete": len(done), "errors": sum(1 for o in self.outcomes if o.error), "lost": self.lost,
            "tokens": tokens, "wall_s": round(wall, 3),
            "total_tps": round(tokens / wall, 1) if wall else 0.0,
            "ttft_p50_ms": round(percentile(ttft, 50), 1), "ttft_p95_ms": round(percentile(ttft, 95), 1),
            "client_decode_tps_p50": round(percentile(per_request, 50), 1),
            "server_decode_tps_p50": round(percentile(sorted(o.server_decode_tps for o in done), 50), 1),
            "chunk_gap_p50_ms": round(percentile(gaps, 50), 2), "chunk_gap_p95_ms": round(percentile(gaps, 95), 2),
            "tokens_per_chunk": round(tokens / chunks, 3) if chunks else 0.0,
        }


DEFAULT_SAMPLING: dict[str, float] = {"temperature": 0.8}
OPENAI_FIELDS = ("temperature", "top_p", "frequency_penalty", "presence_penalty")  # the rest go in extra_body


def one_request(client: object, model: str, n: int, max_tokens: int, out: Outcome,
                sampling: dict[str, float] | None = None) -> None:
    """One streamed chat completion with usage; fills `out`."""
    out.start = time.perf_counter()
    given = sampling or DEFAULT_SAMPLING
    stream = client.chat.completions.create(  # type: ignore[attr-defined]
        model=model, messages=[{"role": "user", "content": prompt_text(n)}], stream=True,
        stream_options={"include_usage": True}, max_tokens=max_tokens, seed=n,
        **{k: v for k, v in given.items() if k in OPENAI_FIELDS},
        extra_body={"ignore_eos": True, **{k: v for k, v in given.items() if k not in OPENAI_FIELDS}},
    )
    usage = None
    for chunk in stream:
        if chunk.choices:
            c = chunk.choices[0]
            if c.delta.content:
                out.text_chunk()
            if c.finish_reason:
                out.finish = c.finish_reason
                out.server_decode_tps = float((chunk.model_extra or {}).get("timings", {}).get("decode_tps", 0))
        if chunk.usage is not None:
            usage = chunk.usage
    _close(out, usage.completion_tokens if usage else 0, usage is not None, max_tokens)


def _close(out: Outcome, tokens: int, had_usage: bool, max_tokens: int) -> None:
    """A request's end: complete only with its usage, the finish reason and every token."""
    out.end = time.perf_counter()
    out.ttft_s = out.first - out.start if out.first else 0.0
    out.tokens = tokens
    out.complete = had_usage and out.finish == "length" and out.tokens == max_tokens
    if not out.complete:
        out.error = f"incomplete answer: finish {out.finish!r}, {out.tokens}/{max_tokens} tokens"


def _body(model: str, n: int, max_tokens: int, sampling: dict[str, float] | None) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": prompt_text(n)}], "stream": True,
            "stream_options": {"include_usage": True}, "max_tokens": max_tokens, "seed": n, "ignore_eos": True,
            **(sampling or DEFAULT_SAMPLING)}


class RawClient:
    """Streamed chat completions read with `http.client`: one JSON parse per chunk, no objects built."""

    def __init__(self, base_url: str, api_key: str, timeout: float = 120, chunks_are_tokens: bool = False,
                 sampling: dict[str, float] | None = None):
        self.sampling = sampling
        self.chunks_are_tokens = chunks_are_tokens  # a server that streams no usage (llama-cpp-python's)
        parts = urlsplit(base_url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path.rstrip("/")
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"}
        self.timeout = timeout

    def one_request(self, model: str, n: int, max_tokens: int, out: Outcome) -> None:
        out.start = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            body = json.dumps(_body(model, n, max_tokens, self.sampling))
            conn.request("POST", self.path + "/chat/completions", body, self.headers)
            resp = conn.getresponse()
            if resp.status != 200:
                raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:200]!r}")
            usage = None
            for line in resp:
                if not line.startswith(b"data: {"):
                    continue
                chunk = json.loads(line[6:])
                for c in chunk.get("choices") or ():
                    if (c.get("delta") or {}).get("content"):
                        out.text_chunk()
                    if c.get("finish_reason"):
                        out.finish = c["finish_reason"]
                        out.server_decode_tps = float((chunk.get("timings") or {}).get("decode_tps", 0))
                if chunk.get("usage"):
                    usage = chunk["usage"]
        finally:
            conn.close()
        if self.chunks_are_tokens and usage is None:  # one token a chunk; it may stop before max_tokens
            out.end = time.perf_counter()
            out.ttft_s = out.first - out.start if out.first else 0.0
            out.tokens = out.chunks
            out.complete = out.finish in ("stop", "length")
            out.error = "" if out.complete else f"no finish reason after {out.chunks} chunks"
            return
        _close(out, int(usage["completion_tokens"]) if usage else 0, usage is not None, max_tokens)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux's /proc; 0 elsewhere)."""
    return stat_cpu_s(Path(f"/proc/{pid}/stat"))


def stat_cpu_s(stat: Path) -> float:
    """User + system CPU seconds in a /proc `stat` file (a process's, or a thread's under task/); 0 when
    it cannot be read."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_load(base_url: str, model: str, clients: int, duration_s: float, max_tokens: int,
             api_key: str = "none", requests_per_client: int = 0, raw: bool = False,
             chunks_are_tokens: bool = False, sampling: dict[str, float] | None = None,
             first: int = 1) -> LoadReport:
    """`clients` threads stream until `duration_s` has passed (or each sent `requests_per_client`);
    `raw`: with `RawClient` rather than the `openai` client; `sampling`: the request's sampling fields
    (default: temperature 0.8); `first`: the first request's prompt number (`prompt_text`): a run that
    must find none of its prompts cached from an earlier run on the same server starts past them."""
    from openai import OpenAI

    report = LoadReport(clients, duration_s)
    lock = threading.Lock()
    counter = iter(range(first, 10**9))
    deadline = time.perf_counter() + duration_s

    def client_loop(idx: int) -> None:
        client: object = (RawClient(base_url, api_key, chunks_are_tokens=chunks_are_tokens, sampling=sampling) if raw
                          else OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=120))
        sent = 0
        while time.perf_counter() < deadline and (not requests_per_client or sent < requests_per_client):
            with lock:
                n = next(counter)
                report.started += 1
            out = Outcome(idx)
            try:
                if isinstance(client, RawClient):
                    client.one_request(model, n, max_tokens, out)
                else:
                    one_request(client, model, n, max_tokens, out, sampling)
            except Exception as e:  # noqa: BLE001 -- an error is an answer too; only a missing record is lost
                out.error = f"{type(e).__name__}: {e}"
                out.end = time.perf_counter()
            with lock:
                report.outcomes.append(out)
            sent += 1

    threads = [threading.Thread(target=client_loop, args=(i,), name=f"client-{i}") for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return report
