"""Compaction in the terminal, on SmolLM2 with a small context: a chat of many turns goes on past
the context with the "summarise" policy (the model's summary in place of the early turns, said on
stderr and in --json), and /compact does it on demand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from prefill.session.compaction import threshold
from tests.compaction_chat import QUESTIONS


def run_chat(model: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "prefill", "chat", "--model", str(model), "--ctx", "512", "--gpu-layers", "none",
           "--temperature", "0", "--max-tokens", "96", "--overflow", "summarise", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, input=stdin)


def test_a_long_chat_goes_on_past_the_context_from_a_summary(smollm2: Path) -> None:
    done = run_chat(smollm2, "--json", *(a for q in QUESTIONS for a in ("--prompt", q)))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert len(rows) == len(QUESTIONS) and all(r["finish_reason"] in ("stop", "length") for r in rows)
    written = sum(r["completion_tokens"] for r in rows)
    assert written + sum(len(q) // 4 for q in QUESTIONS) > 512  # more than the context holds, all told
    compacted = [(i, r["compacted"]) for i, r in enumerate(rows) if r["compacted"]]
    assert compacted, done.stderr
    i, c = compacted[0]
    before = rows[i - 1]
    # what set it off: the answer before, or the next turn with room for its answer
    assert before["prompt_tokens"] + before["completion_tokens"] + 96 >= threshold(512)
    assert c["summary"].strip() and c["turns"] >= 2 and c["tokens_after"] < c["tokens_before"]
    assert rows[i]["prompt_tokens"] < before["prompt_tokens"]  # the turn after reads the summary, not the turns
    assert "earlier turns summarised" in done.stderr


def test_compact_on_demand_in_the_terminal(smollm2: Path) -> None:
    lines = "\n".join([QUESTIONS[0], "/compact", QUESTIONS[-1]]) + "\n"
    done = run_chat(smollm2, stdin=lines)
    assert done.returncode == 0, done.stderr
    assert "summarising the chat so far" in done.stderr and "1 earlier turn summarised" in done.stderr
    early = run_chat(smollm2, stdin="/compact\n")
    assert early.returncode == 0 and "nothing to summarise yet" in early.stderr
