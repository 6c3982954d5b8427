"""The leanest batched loop on the same llama.cpp library: the yardstick for the server's scheduler.

Sequences go in waves of the context's sequence count: each wave's prompts are
prefilled in one batch, then every sequence decodes one token per `llama_decode`,
sampled with its own chain, until each has `max_tokens`. No queue, no text, no HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import llama_cpp

from prefill.engine.batch.runtime import BatchRuntime
from prefill.engine.settings import ServeSampling


def lean_batch_generate(
    rt: BatchRuntime, prompts: Sequence[Sequence[int]], sampling: ServeSampling, wave: int = 0,
) -> tuple[int, float]:
    """Decode every prompt to `sampling.max_tokens` tokens, `wave` (default: all slots) at a time.

    Returns the tokens generated and the wall time in seconds, prefill included.
    """
    wave = min(wave or rt.n_seq, rt.n_seq)
    ctx, mem = rt.ctx, rt.memory
    batch = llama_cpp.llama_batch_init(max(rt.n_batch, wave), 0, 1)
    decode, sample = llama_cpp.llama_decode, llama_cpp.llama_sampler_sample
    generated = 0
    t0 = time.perf_counter()
    try:
        for w in range(0, len(prompts), wave):
            group = prompts[w : w + wave]
            for s in range(len(group)):
                llama_cpp.llama_memory_seq_rm(mem, s, -1, -1)
            samplers = [rt.new_sampler(sampling, sampling.seed + w + s) for s in range(len(group))]
            rows = _prefill(rt, batch, group)
            pos = [len(p) for p in group]
            for step in range(sampling.max_tokens):
                toks = [sample(samplers[s], ctx, rows[s]) for s in range(len(group))]
                generated += len(group)
                if step == sampling.max_tokens - 1:
                    break
                for s, tok in enumerate(toks):
                    batch.token[s], batch.pos[s], batch.n_seq_id[s] = tok, pos[s], 1
                    batch.seq_id[s][0], batch.logits[s] = s, 1
                    pos[s] += 1
                batch.n_tokens = len(group)
                if decode(ctx, batch) != 0:
                    raise RuntimeError("llama_decode failed in the lean batched loop")
                rows = list(range(len(group)))
            for smp in samplers:
                llama_cpp.llama_sampler_free(smp)
    finally:
        llama_cpp.llama_batch_free(batch)
    return generated, time.perf_counter() - t0


def _prefill(rt: BatchRuntime, batch: llama_cpp.llama_batch, group: Sequence[Sequence[int]]) -> list[int]:
    """Every prompt of the wave into its sequence: all but the last tokens n_batch at a time, then
    one batch of every prompt's last token, whose logits are kept; returns their rows."""
    body = [(s, i, t) for s, p in enumerate(group) for i, t in enumerate(p[:-1])]
    last = [(s, len(p) - 1, p[-1]) for s, p in enumerate(group)]
    for start in range(0, len(body), rt.n_batch):
        _fill(batch, body[start : start + rt.n_batch], logits=False)
        if llama_cpp.llama_decode(rt.ctx, batch) != 0:
            raise RuntimeError("llama_decode failed in the lean batched loop")
    _fill(batch, last, logits=True)
    if llama_cpp.llama_decode(rt.ctx, batch) != 0:
        raise RuntimeError("llama_decode failed in the lean batched loop")
    return list(range(len(group)))


def _fill(batch: llama_cpp.llama_batch, entries: Sequence[tuple[int, int, int]], logits: bool) -> None:
    for row, (s, i, t) in enumerate(entries):
        batch.token[row], batch.n_seq_id[row] = t, 1
        batch.pos[row] = i  # type: ignore[call-overload]  # llama-cpp-python's stubs mistype `pos`
        batch.seq_id[row][0], batch.logits[row] = s, logits
    batch.n_tokens = len(entries)
