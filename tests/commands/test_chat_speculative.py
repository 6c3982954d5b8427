"""`prefill chat --speculative`: the same answers, with the draft figures in --json."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands.test_chat_terminal import SMALL, prefill

COPY = ("Repeat this exactly: the cat sat on the mat, the dog sat on the log, "
        "and the bird sat on the wall by the old stone gate.")
GREEDY = [*SMALL, "--repeat-penalty", "1", "--flash-attn", "--max-tokens", "40"]  # a bare --flash-attn: on


def turns(tmp_path: Path, *args: str) -> tuple[list[dict[str, object]], str]:
    out = prefill(tmp_path, "chat", "--model", "bundled", "--prompt", COPY, "--prompt", "Again.", "--json",
                  *args)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()], out.stderr


def test_speculative_ngram_answers_as_off_and_counts_drafts(tmp_path: Path) -> None:
    plain, _ = turns(tmp_path, *GREEDY, "--speculative", "off")
    fast, err = turns(tmp_path, *GREEDY, "--speculative", "ngram")
    assert [t["answer"] for t in fast] == [t["answer"] for t in plain]
    assert [t["cached_tokens"] for t in fast] == [t["cached_tokens"] for t in plain]
    assert all(t["draft_n"] == t["draft_n_accepted"] == 0 for t in plain)
    assert sum(int(t["draft_n_accepted"]) for t in fast) > 0  # type: ignore[call-overload]
    assert fast[0]["draft_drift"] == 0.0  # measured: the bundled Q4_1's batches match one-token decodes
    assert "speculative" not in err


def test_draft_max_caps_each_draft(tmp_path: Path) -> None:
    fast, _ = turns(tmp_path, *GREEDY, "--speculative", "ngram", "--draft-max", "1")
    drafted = [int(t["draft_n"]) for t in fast]  # type: ignore[call-overload]
    steps = [int(t["completion_tokens"]) - int(t["draft_n_accepted"]) for t in fast]  # type: ignore[call-overload]
    # one token a step at most (the step that ends the answer is not a token of it)
    assert sum(drafted) > 0 and all(d <= s + 1 for d, s in zip(drafted, steps, strict=True)), (drafted, steps)
    out = prefill(tmp_path, "chat", "--model", "bundled", "--prompt", "Hi", "--draft-max", "33")
    assert out.returncode != 0 and "--draft-max" in out.stderr and "1 to 32" in out.stderr


def test_speculative_says_why_it_is_off(tmp_path: Path) -> None:
    fast, err = turns(tmp_path, *SMALL, "--max-tokens", "8", "--speculative", "ngram")  # repeat penalty 1.1
    assert all(t["draft_n"] == 0 for t in fast)
    assert "prefill: speculative decoding runs without penalties only" in err


def test_speculative_with_a_draft_model_answers_as_off(tmp_path: Path) -> None:
    from prefill.hub.bundled import bundled_model_path

    smollm2 = bundled_model_path()
    assert smollm2 is not None
    plain, _ = turns(tmp_path, *GREEDY, "--speculative", "off")
    fast, err = turns(tmp_path, *GREEDY, "--speculative", str(smollm2))  # a perfect draft: itself
    assert [t["answer"] for t in fast] == [t["answer"] for t in plain]
    assert all(int(t["draft_n_accepted"]) > 0 for t in fast)  # type: ignore[call-overload]
    assert "speculative" not in err and "draft" not in err


def test_a_refused_draft_model_is_one_line_and_the_chat_goes_on(tmp_path: Path) -> None:
    notes = tmp_path / "notes.gguf"
    notes.write_text("not a model")
    fast, err = turns(tmp_path, *GREEDY, "--speculative", str(notes))
    assert len(fast) == 2 and all(t["answer"] and t["draft_n"] == 0 for t in fast)
    said = [line for line in err.splitlines() if "notes.gguf" in line]
    assert said == ["prefill: the draft model notes.gguf could not be loaded: not a GGUF file (wrong magic bytes); "
                    "speculative decoding is off"]


def test_speculative_refuses_a_value_that_is_neither_mode_nor_model(tmp_path: Path) -> None:
    out = prefill(tmp_path, "chat", "--model", "bundled", "--prompt", "Hi", "--speculative", "fast")
    assert out.returncode != 0
    assert "expected off, ngram or a draft model's .gguf file, not 'fast'" in out.stderr


def test_speculative_ngram_drafts_with_the_default_flash_attention(tmp_path: Path) -> None:
    """No --flash-attn: "auto", which llama.cpp's CPU backend turns on, so drafts are checked, and
    --json says flash attention is on as llama.cpp resolved it."""
    out = prefill(tmp_path, "chat", "--model", "bundled", "--prompt", COPY, "--json", *SMALL, "--repeat-penalty", "1",
                  "--max-tokens", "40", "--speculative", "ngram")
    assert out.returncode == 0, out.stderr
    turn = json.loads(out.stdout.splitlines()[0])
    assert int(turn["draft_n_accepted"]) > 0 and turn["flash_attn"] is True  # type: ignore[call-overload]
    assert "speculative" not in out.stderr


def test_flash_attention_off_is_reported_and_stops_speculation(tmp_path: Path) -> None:
    out = prefill(tmp_path, "chat", "--model", "bundled", "--prompt", "Hi", "--json", *SMALL, "--repeat-penalty", "1",
                  "--max-tokens", "4", "--speculative", "ngram", "--flash-attn", "off")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0])["flash_attn"] is False
    assert "speculative decoding needs flash attention on" in out.stderr
