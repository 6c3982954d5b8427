"""`prefill chat` and `prefill bench` as a person runs them: JSON lines, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from prefill.commands.chat import JSON_FIELDS


def prefill(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prefill", *args], capture_output=True, text=True, timeout=timeout)


def test_chat_json_has_every_field_per_turn(smollm2: Path) -> None:
    out = prefill("chat", "--model", str(smollm2), "--ctx", "1024", "--system", "Be brief.",
                  "--prompt", "Hi!", "--prompt", "What is 2 + 2?", "--json", "--max-tokens", "24",
                  "--temperature", "0", "--gpu-layers", "none")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == 2
    for turn in lines:
        assert set(turn) == {"answer", "reasoning", "finish_reason", "chat_format", *JSON_FIELDS,
                             "gpu_layers", "total_layers", "device", "vram_bytes", "flash_attn", "reasoning_budget",
                             "compacted", "sources", "retrieval"}
        assert turn["reasoning_budget"] is None and turn["compacted"] is None  # SmolLM2 does not reason; short chat
        assert turn["sources"] == [] and turn["retrieval"] is None  # no --docs
        assert turn["gpu_layers"] == 0 and turn["device"] == "CPU" and turn["vram_bytes"] == 0
        assert turn["answer"] and turn["finish_reason"] in ("stop", "length")
        assert turn["chat_format"] == "template" and turn["reasoning"] == "" and turn["reasoning_tokens"] == 0
        assert "<|im_end|>" not in turn["answer"] and "<|im_start|>" not in turn["answer"]
        assert turn["kv_total"] == 1024 and turn["kv_used"] > 0
    assert lines[1]["cached_tokens"] > 0  # the second turn reused the first
    assert lines[1]["evaluated_tokens"] < lines[1]["prompt_tokens"]


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model at all" * 10)
    for args, code in ((["chat", "--model", str(bad), "--prompt", "x"], 1),
                       (["chat", "--model", str(tmp_path / "missing.gguf"), "--prompt", "x"], 1),
                       (["chat", "--ctx", "lots"], 2),
                       (["bench", "--gen-tokens", "x"], 2)):
        out = prefill(*args)
        assert out.returncode == code, (args, out.stderr)
        assert "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("prefill: ")


def test_bench_prints_both_loops_and_ratios(tiny_model: Path) -> None:
    out = prefill("bench", "--model", str(tiny_model), "--prompt-tokens", "64", "--gen-tokens", "64",
                  "--reps", "1", "--json", "--gpu-layers", "none")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    for side in ("engine", "lean"):
        assert r[side]["decode_tps"] > 0 and r[side]["prefill_tps"] > 0 and r[side]["gen_tokens"] > 10
    assert set(r["ratio"]) == {"decode_tps", "prefill_tps", "ms_per_token_first", "ms_per_token_last"}


def test_bench_without_json_prints_a_table() -> None:
    from prefill.commands.bench import table

    side = {"prefill_tps": 900.0, "decode_tps": 120.0, "ms_per_token_first": 8.0, "ms_per_token_last": 8.5}
    ratio = {"prefill_tps": 1.0, "decode_tps": 0.97, "ms_per_token_first": 1.02, "ms_per_token_last": 1.01}
    out = table({"model": "m.gguf", "backend": "CPU", "reps": 3, "engine": side, "lean": side, "ratio": ratio})
    lines = out.splitlines()
    assert lines[0] == "m.gguf · CPU · median of 3 runs each" and lines[1].split() == ["engine", "lean", "ratio"]
    assert lines[3].split() == ["decode", "tok/s", "120.0", "120.0", "0.97"] and len(lines) == 6
