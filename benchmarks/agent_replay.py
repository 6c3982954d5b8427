"""An agent's session replayed against `prefill serve`, through each dialect it speaks.

The shape (issue 35): a long system prompt with 20 tool schemas, then turns that each add a tool call
and its result (200-2,000 tokens of code) and ask the model to go on; the model's short answer is read
and dropped (the next turn's transcript is scripted, so every mode reads the same prompts). Run with 1
conversation and with 3 interleaved on a 2-slot server, the prompt cache on and off, speculation on
and off. Per turn: the client's time to the first token, the prompt's tokens and those prefilled
(the prompt less those the server reused: `prompt_eval_cached_count` in Ollama's last line), the decode rate.

    PYTHONPATH=app python benchmarks/agent_replay.py --json [--model PATH] [--system-tokens 12000]
        [--turns 10] [--dialects openai,anthropic,responses,ollama] [--conversations 1,3]
        [--cache on,off] [--speculative off,ngram]

Goals: from turn 2, tokens prefilled per turn <= the new tokens + 64; TTFT per turn <= 1.2 x the prefill
of the new tokens alone; with 3 interleaved conversations the same. `summary` gives, per mode, the
worst turn's prefilled tokens over its new ones and the median TTFT. Where the dialect gives the server's
prefill time (Chat Completions' `timings`, Ollama's `prompt_eval_duration`), each turn also gives
`new_prefill_ms` (the new tokens at the turn's measured prefill rate) and `ttft_over_new_prefill`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "app")]

from prompt_cache_bench import serve  # noqa: E402

from prefill.hub.bundled import bundled_model_path  # noqa: E402

WORDS = ("def", "return", "self", "value", "index", "items", "result", "config", "path", "buffer", "parse",
         "token", "cache", "slot", "request", "handle", "stream", "event", "error", "count")
DIALECTS = ("openai", "anthropic", "responses", "ollama")


# --- the session's shape ---------------------------------------------------------------------------
def tools(seed: int) -> list[dict[str, Any]]:
    """20 tool schemas, as a coding agent offers them."""
    rng = random.Random(seed)
    out = []
    for i in range(20):
        props = {f"{rng.choice(WORDS)}_{k}": {"type": rng.choice(["string", "integer", "boolean"]),
                                             "description": " ".join(rng.choice(WORDS) for _ in range(8))}
                 for k in range(4)}
        words = " ".join(rng.choice(WORDS) for _ in range(30))
        out.append({"name": f"tool_{i}_{rng.choice(WORDS)}", "description": words,
                    "parameters": {"type": "object", "properties": props, "required": list(props)[:2]}})
    return out


def code(rng: random.Random, tokens: int) -> str:
    """About `tokens` tokens of Python-like text (a file the agent read)."""
    lines = []
    while sum(len(x) for x in lines) < tokens * 3:
        a, b, c = (rng.choice(WORDS) for _ in range(3))
        lines.append(f"    {a}_{b} = {c}.{rng.choice(WORDS)}({a}, {rng.randint(0, 99)})")
        if rng.random() < 0.1:
            lines.append(f"def {a}_{c}({b}):")
    return "\n".join(lines)


class Session:
    """One conversation's scripted transcript: a system prompt, then (call, result) rounds."""

    def __init__(self, seed: int, system_tokens: int):
        self.rng = random.Random(seed)
        self.tools = tools(seed)
        self.system = (f"You are coding agent {seed}. Use the tools to read and change files; answer briefly, "
                       f"quoting code exactly.\n\n# Project notes\n" + code(self.rng, system_tokens))
        self.rounds: list[tuple[str, dict[str, Any], str]] = []  # (call id, call, result)
        self.task = "Find where the cache is filled and explain it."

    def add_round(self) -> None:
        tool = self.rng.choice(self.tools)
        args = {k: "x" for k in tool["parameters"]["properties"]}
        self.rounds.append((f"call_{len(self.rounds)}", {"name": tool["name"], "arguments": args},
                            code(self.rng, self.rng.randint(200, 2000))))


def openai_body(s: Session, max_tokens: int) -> tuple[str, dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": s.system}, {"role": "user", "content": s.task}]
    for cid, call, result in s.rounds:
        function = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
        messages.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": cid, "type": "function", "function": function}]})
        messages.append({"role": "tool", "tool_call_id": cid, "content": result})
    return "/v1/chat/completions", {
        "model": "x", "messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": t} for t in s.tools]}


def anthropic_body(s: Session, max_tokens: int) -> tuple[str, dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": s.task}]
    for cid, call, result in s.rounds:
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": cid, "name": call["name"], "input": call["arguments"]}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": result}]})
    return "/v1/messages", {
        "model": "x", "system": s.system, "messages": messages, "max_tokens": max_tokens, "temperature": 0,
        "stream": True, "tools": [{"name": t["name"], "description": t["description"],
                                   "input_schema": t["parameters"]} for t in s.tools]}


def responses_body(s: Session, max_tokens: int) -> tuple[str, dict[str, Any]]:
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": s.task}]
    for cid, call, result in s.rounds:
        items.append({"type": "function_call", "call_id": cid, "name": call["name"],
                      "arguments": json.dumps(call["arguments"])})
        items.append({"type": "function_call_output", "call_id": cid, "output": result})
    return "/v1/responses", {
        "model": "x", "instructions": s.system, "input": items, "max_output_tokens": max_tokens, "temperature": 0,
        "stream": True, "store": False, "tools": [{"type": "function", **t} for t in s.tools]}


def ollama_body(s: Session, max_tokens: int) -> tuple[str, dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": s.system}, {"role": "user", "content": s.task}]
    for _, call, result in s.rounds:
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"function": call}]})
        messages.append({"role": "tool", "content": result})
    return "/api/chat", {"model": "x", "messages": messages, "stream": True,
                         "options": {"num_predict": max_tokens, "temperature": 0},
                         "tools": [{"type": "function", "function": t} for t in s.tools]}


BODIES = {"openai": openai_body, "anthropic": anthropic_body, "responses": responses_body, "ollama": ollama_body}


# --- reading a streamed answer ---------------------------------------------------------------------
def events(r: httpx.Response, dialect: str) -> Iterator[dict[str, Any]]:
    for line in r.iter_lines():
        if dialect == "ollama":
            if line.strip():
                yield json.loads(line)
        elif line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[6:])


def text_of(ev: dict[str, Any], dialect: str) -> bool:
    """Whether an event carries the answer's first text (or a call's)."""
    if dialect == "openai":
        delta = (ev.get("choices") or [{}])[0].get("delta", {})
        return bool(delta.get("content") or delta.get("tool_calls") or delta.get("reasoning_content"))
    if dialect == "anthropic":
        return ev.get("type") == "content_block_delta"
    if dialect == "responses":
        return str(ev.get("type", "")).endswith(".delta")
    return bool(ev.get("message", {}).get("content") or ev.get("message", {}).get("tool_calls"))


def figures(ev: dict[str, Any], dialect: str, out: dict[str, Any]) -> None:
    """Take the prompt's tokens, those reused and the answer's from the events that carry them."""
    if dialect == "openai" and ev.get("usage"):
        u = ev["usage"]
        out.update(prompt=u["prompt_tokens"], cached=u["prompt_tokens_details"]["cached_tokens"],
                   completion=u["completion_tokens"])
        if ev.get("timings"):
            out["prefill_ms"] = ev["timings"]["prefill_ms"]
    elif dialect == "anthropic" and ev.get("type") == "message_delta":
        u = ev["usage"]
        out.update(prompt=u["input_tokens"] + u["cache_read_input_tokens"], cached=u["cache_read_input_tokens"],
                   completion=u["output_tokens"])
    elif dialect == "responses" and ev.get("type") in ("response.completed", "response.incomplete"):
        u = ev["response"]["usage"]
        out.update(prompt=u["input_tokens"], cached=u["input_tokens_details"]["cached_tokens"],
                   completion=u["output_tokens"])
    elif dialect == "ollama" and ev.get("done"):
        out.update(prompt=ev["prompt_eval_count"], cached=ev.get("prompt_eval_cached_count"),
                   completion=ev["eval_count"],
                   prefill_ms=ev["prompt_eval_duration"] / 1e6)


def ask(client: httpx.Client, dialect: str, s: Session, max_tokens: int) -> dict[str, Any]:
    path, body = BODIES[dialect](s, max_tokens)
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    first = None
    with client.stream("POST", path, json=body, headers={"Authorization": "Bearer agent"}) as r:
        if r.status_code != 200:
            raise SystemExit(f"{dialect}: {r.status_code} {r.read()[:300]!r}")
        for ev in events(r, dialect):
            if first is None and text_of(ev, dialect):
                first = time.perf_counter()
            figures(ev, dialect, out)
    end = time.perf_counter()
    first = first or end
    n = out.get("completion") or 0
    out["ttft_ms"] = round((first - t0) * 1000, 1)
    out["decode_tps"] = round((n - 1) / (end - first), 1) if n > 1 and end > first else None
    out["prefilled"] = out["prompt"] - out["cached"] if out.get("cached") is not None else None
    return out


def new_prefill(row: dict[str, Any]) -> None:
    """What prefilling the turn's new tokens alone took, at this turn's measured rate per prefilled token (the
    server's own prefill time, where the dialect gives it), and the TTFT over it (the goal: <= 1.2)."""
    ms, prefilled = row.get("prefill_ms"), row.get("prefilled")
    if ms and prefilled:
        alone = ms / prefilled * row["new"]
        row["new_prefill_ms"] = round(alone, 1)
        row["ttft_over_new_prefill"] = round(row["ttft_ms"] / alone, 2) if alone > 0 else None


# --- runs --------------------------------------------------------------------------------------------
def serve_mode(model: Path, ctx: int, cache: str, speculative: str) -> tuple[subprocess.Popen[str], str]:
    """The server for one mode (its `--ctx` after the shared default, so it counts)."""
    return serve(model, "--ctx", str(ctx), "--speculative", speculative, "--alias", "x",
                 *(["--cache-ram", "0"] if cache == "off" else []))


def replay(client: httpx.Client, dialect: str, n_conv: int, args: argparse.Namespace, seed: int
           ) -> list[dict[str, Any]]:
    sessions = [Session(seed + i, args.system_tokens) for i in range(n_conv)]
    rows = []
    last = [0] * n_conv
    for turn in range(args.turns):
        for i, s in enumerate(sessions):
            if turn:
                s.add_round()
            row = ask(client, dialect, s, args.max_tokens)
            row.update(turn=turn + 1, conversation=i, new=row["prompt"] - last[i])
            new_prefill(row)
            last[i] = row["prompt"]
            rows.append(row)
            print(json.dumps({"dialect": dialect, "conversations": n_conv, **row}), file=sys.stderr, flush=True)
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    later = [r for r in rows if r["turn"] > 1]
    over = [r["prefilled"] - r["new"] for r in later if r["prefilled"] is not None]
    rates = [r["decode_tps"] for r in later if r["decode_tps"]]
    ratios = [r["ttft_over_new_prefill"] for r in later if r.get("ttft_over_new_prefill")]
    return {"prompt_tokens_last": max(r["prompt"] for r in rows),
            "prefilled_over_new_max": max(over) if over else None,
            "prefilled_median": statistics.median(r["prefilled"] for r in later) if over else None,
            "new_median": statistics.median(r["new"] for r in later) if later else None,
            "ttft_ms_median": statistics.median(r["ttft_ms"] for r in later) if later else None,
            "decode_tps_median": statistics.median(rates) if rates else None,
            "ttft_over_new_prefill_max": max(ratios) if ratios else None,
            "ttft_over_new_prefill_median": statistics.median(ratios) if ratios else None}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print one JSON object (the default prints it indented)")
    p.add_argument("--model", type=Path, default=None, help="a chat GGUF (default: the bundled SmolLM2)")
    p.add_argument("--system-tokens", type=int, default=12000, help="the system prompt's size (default 12000)")
    p.add_argument("--turns", type=int, default=10, help="turns of each conversation (default 10)")
    p.add_argument("--max-tokens", type=int, default=48, help="each answer's length at most (default 48)")
    p.add_argument("--ctx", type=int, default=0, help="each slot's context (default: what the session needs)")
    p.add_argument("--dialects", default=",".join(DIALECTS))
    p.add_argument("--conversations", default="1,3")
    p.add_argument("--cache", default="on,off")
    p.add_argument("--speculative", default="off,ngram")
    args = p.parse_args()
    model = args.model or bundled_model_path()
    if model is None:
        raise SystemExit("no model: give --model")
    ctx = args.ctx or int((args.system_tokens + args.turns * 2100 + 2000) * 1.1)
    runs = []
    seed = 0
    for cache in args.cache.split(","):
        for spec in args.speculative.split(","):
            proc, url = serve_mode(model, ctx, cache, spec)
            try:
                client = httpx.Client(base_url=url, timeout=3600)
                for dialect in args.dialects.split(","):
                    for n in (int(x) for x in args.conversations.split(",")):
                        seed += 10  # prompts of their own: no run reads another's
                        rows = replay(client, dialect, n, args, seed)
                        runs.append({"cache": cache, "speculative": spec, "dialect": dialect, "conversations": n,
                                     "summary": summary(rows), "turns": rows})
                        print(json.dumps({k: runs[-1][k] for k in ("cache", "speculative", "dialect", "conversations",
                                                                   "summary")}), file=sys.stderr, flush=True)
            finally:
                proc.terminate()
                proc.wait(30)
    out = {"model": model.name, "ctx": ctx, "system_tokens": args.system_tokens, "turns": args.turns,
           "load_average": os.getloadavg(), "runs": runs}
    print(json.dumps(out) if args.json else json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
