"""Hostile model files and small contexts: a clean error and a live process, never an abort.

llama.cpp aborts the process (GGML_ASSERT, or a C++ exception nothing catches) on each
faulty file of `hostile_models.CASES` when nothing stops it first, so the loads run
in a child process: a crash there is the failure, and the line it last printed names
the case that caused it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from prefill.engine.errors import ModelLoadError
from prefill.engine.gguf.guard import read_model_header
from prefill.engine.gguf.header import read_header
from tests.engine.hostile_models import CASES, N_VOCAB, WRONG_TYPES, long_prompt, write_case

ROOT = Path(__file__).resolve().parents[3]


def run_jobs(jobs: list[tuple[Path, int, int]]) -> list[tuple[str, int]]:
    """Each job (model, n_ctx, prompt words) in one child process; its error text and prompt tokens."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "app"), str(ROOT)])}
    args = [json.dumps([str(p), n, w]) for p, n, w in jobs]
    out = subprocess.run([sys.executable, "-m", "tests.engine.hostile_models", *args], check=False,
                         capture_output=True, text=True, env=env, timeout=600)
    lines = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0:
        last = lines[-1].get("start", "?") if lines else "before the first job"
        pytest.fail(f"the process died (exit {out.returncode}) on {last}:\n{out.stderr[-2000:]}")
    return [(ln["error"], ln["prompt_tokens"]) for ln in lines if "done" in ln]


@pytest.mark.model  # each file is loaded in a child (tests/engine/hostile_models.py)
def test_every_hostile_file_is_refused_cleanly_and_the_process_lives(tmp_path: Path) -> None:
    paths = {case.name: write_case(case, tmp_path) for case in CASES}
    results = run_jobs([(paths[c.name], 300, 40) for c in CASES])
    assert len(results) == len(CASES)
    for case, (error, _) in zip(CASES, results):
        if case.expect:
            assert case.expect in error, (case.name, error)
        else:
            assert error == "", (case.name, error)


@pytest.mark.parametrize("n_ctx", [128, 300])  # 128: the schema's minimum, the GUI's too
def test_prompt_longer_than_the_batch_llama_cpp_picked(tiny_model: Path, n_ctx: int) -> None:
    """llama.cpp caps its batch at the context asked for and rounds the context up (300 -> 512):
    a prompt longer than the first and shorter than the second must be decoded in pieces."""
    words = 330 if n_ctx >= 300 else 200
    ((error, prompt_tokens),) = run_jobs([(tiny_model, n_ctx, words)])
    assert error == "" and prompt_tokens > n_ctx


def test_the_checks_run_before_llama_cpp(tmp_path: Path) -> None:
    """The faulty files never reach llama.cpp: the header check refuses them in this process."""
    for case in CASES:
        path = write_case(case, tmp_path)
        if case.refused_by == "header":
            with pytest.raises(ModelLoadError, match=re.escape(case.expect)):
                read_model_header(path)
        else:
            read_model_header(path)


def test_wrong_metadata_types_are_model_load_errors_for_every_reader(tmp_path: Path) -> None:
    """The library and the fit estimate read the header too: a wrong type is never a TypeError."""
    for case in CASES:
        if case.name in WRONG_TYPES:
            with pytest.raises(ModelLoadError, match="metadata is malformed"):
                read_header(write_case(case, tmp_path))


def test_the_vocabulary_is_dropped_after_the_check(tmp_path: Path) -> None:
    plain = next(c for c in CASES if c.name == "plain")
    path = write_case(plain, tmp_path)
    assert read_header(path, keep_tokens=True).tokens is not None
    assert len(read_header(path, keep_tokens=True).tokens or []) == N_VOCAB
    assert read_model_header(path).tokens is None


def test_cli_chat_small_context_long_prompt(tiny_model: Path) -> None:
    """The reported crash: `prefill chat --ctx 300` and a 330-word prompt (SIGABRT in llama_decode)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "app"), str(ROOT)])}
    out = subprocess.run(
        [sys.executable, "-m", "prefill", "chat", "--model", str(tiny_model), "--ctx", "300", "--gpu-layers", "none",
         "--json", "--temperature", "0", "--max-tokens", "4", "--prompt", long_prompt(330)],
        check=False, capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    turn = json.loads(out.stdout.splitlines()[-1])
    assert turn["prompt_tokens"] > 300 and turn["kv_total"] == 512


RUNTIME_GUARDS = """
import sys
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.errors import EngineError
from prefill.engine.settings import LoadSettings, SamplingSettings

rt = ChatEngine.load(sys.argv[1], LoadSettings(n_ctx=128, n_batch=512, n_gpu_layers="none")).runtime
print(rt.n_batch, rt.n_ctx, flush=True)
sampler = rt.new_sampler(SamplingSettings(), 0)
for call in (lambda: rt.decode([5] * (rt.n_batch + 1)), lambda: rt.decode([]), lambda: rt.sample(sampler)):
    try:
        call()
        print("no error", flush=True)
    except EngineError as e:
        print(type(e).__name__, flush=True)
"""


def test_runtime_refuses_what_llama_cpp_would_abort_on(tiny_model: Path) -> None:
    """A piece longer than llama.cpp's batch, an empty one, sampling before any decode: typed errors."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "app"), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", RUNTIME_GUARDS, str(tiny_model)], check=False,
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:4] == ["128 256", "EngineError", "EngineError", "EngineError"]


def test_cli_chat_small_context_long_prompt_real_model(smollm2: Path) -> None:
    """The issue's own reproduction, with SmolLM2: `prefill chat --ctx 300` and a 330-word prompt."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "app"), str(ROOT)])}
    out = subprocess.run(
        [sys.executable, "-m", "prefill", "chat", "--model", str(smollm2), "--ctx", "300", "--gpu-layers", "none",
         "--json", "--temperature", "0", "--max-tokens", "4", "--prompt", " ".join(["word"] * 330)],
        check=False, capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    turn = json.loads(out.stdout.splitlines()[-1])
    assert turn["prompt_tokens"] > 300 and turn["kv_total"] == 512
