"""`prefill bench --speculative`: the same prompts with and without speculation, compared (few tokens)."""

from __future__ import annotations

import json
from pathlib import Path

from prefill.bench.speculative_compare import table
from tests.commands.test_chat_terminal import prefill

FAST = ["--model", "bundled", "--gpu-layers", "none", "--threads", "1", "--gen-tokens", "24", "--reps", "1"]


def test_ngram_against_plain_in_json(tmp_path: Path) -> None:
    out = prefill(tmp_path, "bench", *FAST, "--speculative", "ngram", "--draft-max", "8", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert (r["speculative"], r["draft_max"], r["reps"], r["gen_tokens"]) == ("ngram", 8, 1, 24)
    assert set(r["tasks"]) == {"copy", "no_copy"}
    for name, t in r["tasks"].items():
        assert t["identical"] is True, name  # greedy: the same text either way
        assert t["plain_tps"] > 0 and t["speculative_tps"] > 0 and t["answer_tokens"] > 0
        assert abs(t["ratio"] - t["speculative_tps"] / t["plain_tps"]) < 0.01
        assert 0 <= t["draft_n_accepted"] <= t["draft_n"] and t["note"] == ""
    assert r["tasks"]["copy"]["draft_n_accepted"] > 0  # the copy task takes drafts from the prompt


def test_table_lines() -> None:
    task = {"answer_tokens": 200, "plain_tps": 50.0, "speculative_tps": 110.0, "ratio": 2.2, "draft_n": 180,
            "draft_n_accepted": 150, "identical": True, "note": ""}
    off = dict(task, ratio=1.0, draft_n=0, draft_n_accepted=0, identical=False,
               note="speculative decoding needs flash attention on")
    out = table({"model": "m.gguf", "backend": "CPU", "speculative": "ngram", "reps": 3,
                 "tasks": {"copy": task, "no_copy": off}})
    lines = out.splitlines()
    assert lines[0] == "m.gguf · CPU · speculative ngram · median of 3 runs each"
    assert lines[2].split() == ["copy", "200", "50.0", "110.0", "2.20", "180", "150", "yes"]
    assert lines[3].split()[-1] == "NO" and lines[4] == "  no_copy: speculative decoding needs flash attention on"


def test_bad_values_are_one_line(tmp_path: Path) -> None:
    for args, said in ((["--speculative", str(tmp_path / "missing.gguf")], "--speculative: expected ngram or"),
                       (["--speculative", "ngram", "--draft-max", "0"], "--draft-max: 0 is not between 1 and 32")):
        out = prefill(tmp_path, "bench", *FAST, *args)
        assert out.returncode == 1 and "Traceback" not in out.stderr
        assert out.stderr.strip().splitlines() == [out.stderr.strip()] and said in out.stderr
