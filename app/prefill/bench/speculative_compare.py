"""`prefill bench --speculative`: the same prompts decoded with and without speculation, compared.

Two tasks: one whose answer copies a passage from the prompt (where drafts from the text itself
pay) and one with nothing to copy (where speculation should cost next to nothing). Runs alternate
plain and speculative decoding on one engine, greedy with neutral penalties and flash attention
(what speculation needs to give the same answer); each task reports decode tok/s both ways (medians),
their ratio (the median of each rep's pair), the drafts checked and accepted, and whether every
speculative answer was the plain one.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from prefill.engine.events import Finished
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.engine.speculation import DRAFT_MAX

PASSAGE = (
    "Every autumn the orchard at the end of Willow Lane filled with people from the town. They came "
    "with baskets and ladders, with children on their shoulders and dogs on long leads, and they "
    "picked apples until the light went gold and then grey. The owner, an old man called Hollis, sat "
    "by the gate with a ledger and a tin box, and he charged whatever people thought was fair. Some "
    "paid in coins, some in jars of honey, and one year a girl paid with a painting of the orchard "
    "in the snow, which he hung above his fireplace and kept for the rest of his life. When Hollis "
    "died, the town found that he had left the orchard to everyone who had ever picked there, and "
    "the ledger, every page of it, held their names."
)
TASKS: tuple[tuple[str, str], ...] = (
    ("copy", "Repeat this passage exactly as it is written, and nothing else:\n\n" + PASSAGE),
    ("no_copy", "Write a few sentences about why the sea is salty."),
)


@dataclass(frozen=True)
class TaskFigures:
    """One task, both ways: medians over the runs, the last speculative run's drafts."""

    answer_tokens: int
    plain_tps: float
    speculative_tps: float
    ratio: float  # speculative ÷ plain decode rate: the median of each rep's pair, run back to back
    draft_n: int  # draft tokens the model checked
    draft_n_accepted: int  # of those, the ones it agreed with
    identical: bool  # every speculative answer was the plain answer, token for token in text
    note: str = ""  # why speculation did not run, when it did not


def greedy(gen_tokens: int) -> SamplingSettings:
    """The sampling speculation gives the same answer with: temperature 0, repeat penalty 1."""
    return SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=gen_tokens)


def speculation_settings(settings: LoadSettings, gen_tokens: int) -> LoadSettings:
    """`settings` with flash attention on (speculation needs it) and room for the longest task."""
    return replace(settings, flash_attn="on", n_ctx=max(settings.n_ctx, 512 + gen_tokens))


def _answer(engine: ChatEngine, prompt: str, mode: str, sampling: SamplingSettings) -> Finished:
    engine.reset_cache()  # the same prefill each run: only the decode differs
    engine.speculative = mode
    for ev in engine.stream(ChatRequest.of([Message("user", prompt)], sampling)):
        if isinstance(ev, Finished):
            return ev
    raise AssertionError("a stream ends with Finished")


def compare_task(
    engine: ChatEngine, prompt: str, mode: str, sampling: SamplingSettings, reps: int, expected: str | None = None,
) -> TaskFigures:
    """Alternate plain and `mode` runs `reps` times each (the order swapped every rep). `expected`: an
    answer decoded before, which every run must also give for `identical` to hold."""
    rates: dict[str, list[float]] = {"off": [], mode: []}
    texts: set[str] = set() if expected is None else {expected}  # greedy: one answer, however it was decoded
    last = None
    note = ""
    for rep in range(max(1, reps)):
        for run in ("off", mode) if rep % 2 == 0 else (mode, "off"):
            f = _answer(engine, prompt, run, sampling)
            rates[run].append(f.metrics.decode_tps)
            texts.add(f.text)
            if run != "off":
                last, note = f, engine.speculation_note
    assert last is not None
    identical = len(texts) == 1
    plain, fast = statistics.median(rates["off"]), statistics.median(rates[mode])
    # Each rep's two runs are seconds apart: their ratio is spared the host's slower minutes, which
    # the two medians taken apart are not.
    pairs = [f / p for p, f in zip(rates["off"], rates[mode], strict=True) if p > 0]
    return TaskFigures(
        answer_tokens=last.metrics.completion_tokens,
        plain_tps=round(plain, 1),
        speculative_tps=round(fast, 1),
        ratio=round(statistics.median(pairs), 3) if pairs else 0.0,
        draft_n=last.metrics.draft_n,
        draft_n_accepted=last.metrics.draft_n_accepted,
        identical=identical,
        note=note,
    )


def compare(
    model: Path, speculative: str, gen_tokens: int = 256, reps: int = 3, settings: LoadSettings | None = None,
    draft_max: int = DRAFT_MAX, tasks: tuple[tuple[str, str], ...] = TASKS,
) -> dict[str, object]:
    """Each task with and without speculation on `model`.

    Args:
        speculative: "ngram" (drafts from the text itself) or a draft model's GGUF path.
        draft_max: The longest draft.

    Raises:
        ModelLoadError: the model could not be loaded.
        EngineError: the draft model was refused.
    """
    settings = speculation_settings(settings or LoadSettings(n_gpu_layers="all"), gen_tokens)
    engine = ChatEngine.load(model, settings)
    try:
        mode = "ngram"
        if speculative != "ngram":
            engine.use_draft_model(speculative)
            mode = "draft"
        engine.draft_max = draft_max
        sampling = greedy(gen_tokens)
        _answer(engine, tasks[0][1], "off", replace(sampling, max_tokens=4))  # warm-up
        figures = {name: asdict(compare_task(engine, prompt, mode, sampling, reps)) for name, prompt in tasks}
        return {
            "model": model.name,
            "backend": engine.device.summary,
            "threads": settings.threads,
            "speculative": speculative,
            "draft_max": draft_max,
            "reps": reps,
            "gen_tokens": gen_tokens,
            "tasks": figures,
        }
    finally:
        engine.close()


def table(result: dict[str, object]) -> str:
    """One line a task: both rates, their ratio, the drafts, and whether the text was the same."""
    tasks = result["tasks"]
    assert isinstance(tasks, dict)
    lines = [f"{result['model']} · {result['backend']} · speculative {result['speculative']} · "
             f"median of {result['reps']} runs each",
             f"{'task':<9}{'tokens':>7}{'plain':>10}{'specul.':>10}{'ratio':>8}{'drafted':>9}{'accepted':>10}"
             f"{'same text':>11}"]
    for name, t in tasks.items():
        lines.append(f"{name:<9}{t['answer_tokens']:>7}{t['plain_tps']:>10.1f}{t['speculative_tps']:>10.1f}"
                     f"{t['ratio']:>8.2f}{t['draft_n']:>9}{t['draft_n_accepted']:>10}"
                     f"{'yes' if t['identical'] else 'NO':>11}")
        if t["note"]:
            lines.append(f"  {name}: {t['note']}")
    lines.append("(tok/s: decode rate; ratio: speculative ÷ plain; drafted/accepted: the last speculative run)")
    return "\n".join(lines)
