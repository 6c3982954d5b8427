"""The threads of the server's batches (the tiny model on real llama.cpp): one sequence's tokens (a
prompt's chunk, one slot's drafts) and drafted steps run on the prompt's threads, several sequences'
plain steps on the decoding threads, and a one-token step on the decoding threads either way. (That
drafted steps of several slots take the wide threads is measured, not tested here:
`serve_speculative_bench.py --clients 4`.)"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import llama_cpp
import pytest

from prefill.engine.batch.request import BatchRequest
from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.settings import LoadSettings
from tests.engine.batch.test_scheduler import GREEDY, Collector

pytestmark = pytest.mark.model


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2-core machine, as CI's: 1 thread to decode, 2 for a prompt (LoadSettings.threads / prefill_threads)."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert (LoadSettings().threads, LoadSettings().prefill_threads) == (1, 2)


def make_scheduler(model: Path, n_threads: int = 0) -> BatchScheduler:
    return BatchScheduler(load_batch_model(model, LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=n_threads), 2))


@pytest.fixture
def sched(tiny_model: Path, two_cores: None) -> Iterator[BatchScheduler]:
    s = make_scheduler(tiny_model)
    yield s
    s.close()


def batch_threads(s: BatchScheduler) -> tuple[int, int]:
    ctx = s.runtime.ctx
    return int(llama_cpp.llama_n_threads(ctx)), int(llama_cpp.llama_n_threads_batch(ctx))


def test_a_wide_batch_runs_on_the_prompts_threads_and_others_on_the_decoding_ones(
        sched: BatchScheduler) -> None:
    rt = sched.runtime
    assert batch_threads(sched) == (1, 1)  # made with the decoding threads
    assert rt.threads_for(True) == 2 and batch_threads(sched) == (1, 2)
    assert rt.threads_for(False) == 1 and batch_threads(sched) == (1, 1)
    assert rt.threads_for(True) == 2 and batch_threads(sched) == (1, 2)


def test_a_request_alone_has_its_prompt_read_on_the_prompts_threads(sched: BatchScheduler) -> None:
    c = Collector()
    sched.submit(BatchRequest(tuple(sched.runtime.tokenize("one two three four five six", add_special=True)),
                              GREEDY, c))
    c.wait()
    assert batch_threads(sched) == (1, 2)  # the scheduler chose them for the prompt's chunk


def test_a_count_set_is_used_for_every_batch(tiny_model: Path, two_cores: None) -> None:
    s = make_scheduler(tiny_model, n_threads=2)
    try:
        assert s.runtime.threads_for(True) == 2 and s.runtime.threads_for(False) == 2
        assert batch_threads(s) == (2, 2)
    finally:
        s.close()
