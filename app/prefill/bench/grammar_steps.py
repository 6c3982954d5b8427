"""What a grammar costs a token, timed as the decode loops sample it, without a model's decode.

Random logits stand for the model's: the chain's pick is then nearly always one the grammar
rejects, so each step pays for the resampling (the grammar judging the best candidates, widening
to the whole vocabulary): the most a grammar can cost a token, which is what a price must bound.
The tests' fuzz of the schema pricing and benchmarks/grammar_cost_bench.py both use this.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any

import llama_cpp
import numpy as np

from prefill.engine.llama.grammar_sampler import Constraint
from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.settings import ServeSampling

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


def grammar_step_times(rt: LlamaRuntime, grammar: str, tokens: int, seed: int = 0,
                       sampling: ServeSampling | None = None) -> list[float]:
    """Seconds each of up to `tokens` grammar-constrained steps took (apply and accept, as
    `llama_sampler_sample` makes them), on random logits over `rt`'s vocabulary; fewer when the
    grammar ends (end-of-generation picked) or lets go. Greedy unless `sampling` says otherwise."""
    s = sampling or ServeSampling(temperature=0.0, max_tokens=tokens)
    sampler = rt.new_sampler(s, seed, Constraint(grammar))
    held = rt.constraint_of(sampler)
    n = rt.n_vocab
    rng = np.random.default_rng(seed)
    data, view, ids, candidates, pointer = _candidates(n)
    times: list[float] = []
    try:
        for _ in range(tokens):
            view["id"], view["logit"], view["p"] = ids, rng.standard_normal(n).astype(np.float32), 0.0
            candidates.data, candidates.size, candidates.selected, candidates.sorted = data, n, -1, False
            began = time.perf_counter()
            llama_cpp.llama_sampler_apply(sampler, pointer)
            token = int(candidates.data[candidates.selected].id)
            llama_cpp.llama_sampler_accept(sampler, token)
            times.append(time.perf_counter() - began)
            if token in rt.eog or held is None or held.released:
                break
    finally:
        rt.free_sampler(sampler)
    return times


def grammar_steps_along(rt: LlamaRuntime, grammar: str, text: str, deadline_s: float = 60.0) -> list[float]:
    """Seconds llama.cpp's grammar takes at each token of `text` (tokenized by `rt`): judging the whole
    vocabulary there (what a resampling costs at its widest) and taking the token. Stops at a token the
    grammar refuses, or once `deadline_s` has passed (a step in C cannot be stopped midway)."""
    grammar_p = llama_cpp.llama_sampler_init_grammar(rt.vocab, grammar.encode(), b"root")
    if not grammar_p:
        raise ValueError("llama.cpp rejected the grammar")
    n = rt.n_vocab
    data, view, ids, candidates, pointer = _candidates(n)
    times: list[float] = []
    end = time.perf_counter() + deadline_s
    try:
        for token in rt.tokenize(text, add_special=False):
            view["id"], view["logit"], view["p"] = ids, 0.0, 0.0
            candidates.data, candidates.size, candidates.selected, candidates.sorted = data, n, -1, False
            began = time.perf_counter()
            llama_cpp.llama_sampler_apply(grammar_p, pointer)
            if not np.isfinite(view["logit"][token]):
                break
            llama_cpp.llama_sampler_accept(grammar_p, token)
            times.append(time.perf_counter() - began)
            if time.perf_counter() > end:
                break
    finally:
        llama_cpp.llama_sampler_free(grammar_p)
    return times


def _candidates(n: int) -> tuple[Any, Any, Any, Any, Any]:
    """A candidates array of `n` tokens for llama_sampler_apply: its storage, a numpy view of it, the
    ids 0..n-1, the array and a pointer to it."""
    data = (llama_cpp.llama_token_data * n)()
    view = np.frombuffer(memoryview(data).cast("B"), dtype=_TOKEN_DATA)
    candidates = llama_cpp.llama_token_data_array(data, n, -1, False)
    return data, view, np.arange(n, dtype=np.int32), candidates, ctypes.pointer(candidates)
