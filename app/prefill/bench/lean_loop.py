"""The leanest generation loop on the same llama.cpp library: decode + native sampler, nothing else.

It is the yardstick for the engine's own overhead in `prefill bench`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import llama_cpp

from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.settings import SamplingSettings


def lean_generate(
    rt: LlamaRuntime, prompt: Sequence[int], sampling: SamplingSettings, seed: int
) -> tuple[float, list[float]]:
    """Prefill `prompt` into an empty cache, then decode up to max_tokens.

    Returns the prefill time in ms and the time at which each token was sampled.
    """
    rt.kv_truncate(0)
    rt.perf_reset()
    ctx, n_batch, eog = rt.ctx, rt.n_batch, rt.eog
    t0 = time.perf_counter()
    for i in range(0, len(prompt), n_batch):
        chunk = prompt[i : i + n_batch]
        arr = (llama_cpp.llama_token * len(chunk))(*chunk)
        llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(arr, len(chunk)))
    prefill_ms = (time.perf_counter() - t0) * 1000
    perf = rt.perf()  # llama.cpp's own timer, as the engine reports it
    if perf.n_p_eval == len(prompt) and perf.t_p_eval_ms > 0:
        prefill_ms = perf.t_p_eval_ms
    sampler = rt.new_sampler(sampling, seed)
    one = (llama_cpp.llama_token * 1)()
    batch = llama_cpp.llama_batch_get_one(one, 1)
    sample, decode, clock = llama_cpp.llama_sampler_sample, llama_cpp.llama_decode, time.perf_counter
    times: list[float] = []
    append = times.append
    for _ in range(sampling.max_tokens):
        tok = sample(sampler, ctx, -1)
        if tok in eog:
            break
        append(clock())
        one[0] = tok
        if decode(ctx, batch) != 0:
            break
    llama_cpp.llama_sampler_free(sampler)
    return prefill_ms, times
