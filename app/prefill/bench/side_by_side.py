"""Measure the engine's streaming path against the lean loop, alternating runs on one model."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from prefill.bench.lean_loop import lean_generate
from prefill.engine.events import Finished, PrefillDone, Token
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings

WINDOW = 128  # tokens at the start and at the end of the answer compared per position


@dataclass(frozen=True)
class RunFigures:
    prompt_tokens: int
    gen_tokens: int
    prefill_ms: float
    prefill_tps: float
    decode_tps: float
    ms_per_token_first: float  # mean gap over the first WINDOW tokens
    ms_per_token_last: float  # mean gap over the last WINDOW tokens


def _figures(prompt_tokens: int, prefill_ms: float, times: list[float]) -> RunFigures:
    gaps = [(b - a) * 1000 for a, b in zip(times, times[1:])]
    w = min(WINDOW, len(gaps)) or 1
    return RunFigures(
        prompt_tokens=prompt_tokens,
        gen_tokens=len(times),
        prefill_ms=prefill_ms,
        prefill_tps=prompt_tokens / prefill_ms * 1000 if prefill_ms else 0.0,
        decode_tps=(len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0,
        ms_per_token_first=sum(gaps[:w]) / w,
        ms_per_token_last=sum(gaps[-w:]) / w,
    )


def build_prompt(engine: ChatEngine, prompt_tokens: int) -> list[Message]:
    """A one-message chat whose prompt is close to `prompt_tokens` tokens long."""
    words = "the quick brown fox jumps over the lazy dog while the engine measures every token".split()
    n_words = max(1, prompt_tokens)
    for _ in range(8):
        text = " ".join(words[i % len(words)] for i in range(n_words))
        msgs = [Message("user", text)]
        n = engine.count_tokens(ChatRequest.of(msgs))
        if abs(n - prompt_tokens) <= 2:
            break
        n_words = max(1, round(n_words * prompt_tokens / max(n, 1)))
    return msgs


def engine_run(engine: ChatEngine, msgs: list[Message], sampling: SamplingSettings) -> RunFigures:
    engine.reset_cache()
    times: list[float] = []
    prefill_ms = 0.0
    prompt = 0
    clock = time.perf_counter
    for ev in engine.stream(ChatRequest.of(msgs, sampling)):
        if type(ev) is Token:
            times.append(clock())
        elif isinstance(ev, PrefillDone):
            prefill_ms, prompt = ev.prefill_ms, ev.evaluated_tokens
        elif isinstance(ev, Finished):
            break
    return _figures(prompt, prefill_ms, times)


def lean_run(engine: ChatEngine, msgs: list[Message], sampling: SamplingSettings) -> RunFigures:
    engine.reset_cache()
    prompt, _, _ = engine._prompt(engine.render(msgs))
    prefill_ms, times = lean_generate(engine.runtime, prompt, sampling, sampling.seed)
    return _figures(len(prompt), prefill_ms, times)


def _median(runs: list[RunFigures]) -> dict[str, float]:
    keys = asdict(runs[0]).keys()
    return {k: statistics.median(getattr(r, k) for r in runs) for k in keys}


def bench(
    model: Path, prompt_tokens: int = 512, gen_tokens: int = 256, reps: int = 3,
    settings: LoadSettings | None = None,
) -> dict[str, object]:
    """Alternate engine and lean runs `reps` times; medians and engine/lean ratios."""
    settings = settings or LoadSettings(n_ctx=max(2048, prompt_tokens + gen_tokens + 64), n_gpu_layers="all")
    engine = ChatEngine.load(model, settings)
    try:
        msgs = build_prompt(engine, prompt_tokens)
        # Greedy-free but seeded: both loops sample the same chain on the same logits.
        sampling = SamplingSettings(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
                                    seed=1234, max_tokens=gen_tokens)
        eng_runs, lean_runs = [], []
        lean_run(engine, msgs, SamplingSettings(max_tokens=8, seed=1))  # warm-up
        for _ in range(reps):
            eng_runs.append(engine_run(engine, msgs, sampling))
            lean_runs.append(lean_run(engine, msgs, sampling))
        e, lean = _median(eng_runs), _median(lean_runs)
        return {
            "model": model.name,
            "backend": engine.device.summary,
            "threads": settings.threads,
            "reps": reps,
            "engine": e,
            "lean": lean,
            # every run, so the spread of this machine is seen beside the medians
            "runs": {
                "engine_decode_tps": [round(r.decode_tps, 1) for r in eng_runs],
                "lean_decode_tps": [round(r.decode_tps, 1) for r in lean_runs],
                "engine_prefill_tps": [round(r.prefill_tps, 1) for r in eng_runs],
                "lean_prefill_tps": [round(r.prefill_tps, 1) for r in lean_runs],
            },
            "ratio": {
                "decode_tps": e["decode_tps"] / lean["decode_tps"] if lean["decode_tps"] else 0.0,
                "prefill_tps": e["prefill_tps"] / lean["prefill_tps"] if lean["prefill_tps"] else 0.0,
                "ms_per_token_first": e["ms_per_token_first"] / lean["ms_per_token_first"]
                if lean["ms_per_token_first"] else 0.0,
                "ms_per_token_last": e["ms_per_token_last"] / lean["ms_per_token_last"]
                if lean["ms_per_token_last"] else 0.0,
            },
        }
    finally:
        engine.close()
