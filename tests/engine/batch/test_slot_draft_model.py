"""A draft model in the server's slots (SmolLM2, flash attention): each slot's answer is token for
token the one plain batched decoding writes, at one slot and at two drafting together; the draft's
sequences follow the slots' accepted text (no rejected cell left, a continued conversation reuses
its prefix); an incompatible draft is refused in words and the slots run without it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from prefill.engine.batch.request import BatchRequest
from prefill.engine.batch.runtime import load_batch_model
from prefill.engine.batch.scheduler import BatchScheduler
from prefill.engine.batch.slot_draft_model import SlotDraftModel
from prefill.engine.errors import DraftModelError
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.settings import LoadSettings
from prefill.engine.speculation import Speculation
from prefill.server.lifecycle import ServeOptions, open_scheduler
from tests.engine.batch.test_speculative_slots import (
    GREEDY,
    PASSAGES,
    Answer,
    Collector,
    check_same,
    copy_prompt,
    submit,
    together,
)
from tests.engine.draft_models import write_random_draft
from tests.engine.vocab_models import vocab_dir, write_scripted

SETTINGS = LoadSettings(n_ctx=1024, n_batch=512, n_gpu_layers="none", n_threads=1, flash_attn="on")
_owners = itertools.count()


def load(model: Path, slots: int, draft: Path | None) -> BatchScheduler:
    loaded = load_batch_model(model, SETTINGS, slots)
    if draft is None:
        return BatchScheduler(loaded, speculative="off")
    return BatchScheduler(loaded, speculative="draft", draft_model=SlotDraftModel.load(draft, loaded.runtime))


@pytest.fixture(scope="module")
def plain(smollm2: Path) -> Iterator[BatchScheduler]:
    s = load(smollm2, 2, None)
    yield s
    s.close()


@pytest.fixture(scope="module")
def itself(smollm2: Path) -> Iterator[BatchScheduler]:
    s = load(smollm2, 2, smollm2)
    yield s
    s.close()


@pytest.fixture(scope="module")
def random_draft(smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_random_draft(tmp_path_factory.mktemp("draft") / "random.gguf", smollm2)


def draft_in_step(s: BatchScheduler) -> None:
    """What each draft sequence believes it holds is what llama.cpp holds."""
    d = s.draft_model
    assert d is not None
    for seq in range(s.n_slots):
        assert d.runtime.seq_cells(seq) == len(d.cached_tokens(seq))


def test_one_slot_drafting_for_itself_is_exact_and_taken(smollm2: Path, plain: BatchScheduler) -> None:
    prompt = copy_prompt(plain, PASSAGES[0])
    s = load(smollm2, 1, smollm2)
    try:
        a, b = together(plain, [prompt])[0], together(s, [prompt])[0]
        check_same(a, b)
        m = b.finished.metrics
        assert m.draft_n > 20 and m.draft_n_accepted >= 0.9 * m.draft_n  # a perfect draft: near ties only differ
        draft_in_step(s)
        assert s.snapshot().speculative == "draft"
    finally:
        s.close()


def test_two_slots_draft_together_and_are_each_exact(plain: BatchScheduler, itself: BatchScheduler) -> None:
    prompts = [copy_prompt(plain, p) for p in (PASSAGES[0], PASSAGES[2])]
    for a, b in zip(together(plain, prompts), together(itself, prompts), strict=True):
        check_same(a, b)
        assert b.finished.metrics.draft_n_accepted > 0.9 * b.finished.metrics.draft_n > 0
    draft_in_step(itself)
    slots = itself.snapshot()
    assert slots.peak_batch_seqs == 2 and slots.draft_n_accepted > 0


def test_stop_string_and_max_tokens_with_a_draft(plain: BatchScheduler, itself: BatchScheduler) -> None:
    prompt = copy_prompt(plain, PASSAGES[0])
    for sampling in (replace(GREEDY, stop=("sausages",)), replace(GREEDY, max_tokens=7)):
        a, b = submit(plain, prompt, sampling).answer(), submit(itself, prompt, sampling).answer()
        check_same(a, b)
    draft_in_step(itself)


def test_a_continued_conversation_reuses_the_draft_prefix(itself: BatchScheduler) -> None:
    prompt = copy_prompt(itself, PASSAGES[1])
    owner = f"c{next(_owners)}"

    def ask(p: tuple[int, ...]) -> Answer:
        c = Collector()
        c.handle = itself.submit(BatchRequest(p, GREEDY, c, owner=owner))
        return c.answer()

    first = ask(prompt)
    d = itself.draft_model
    assert d is not None
    answer_tokens = itself.runtime.tokenize(first.finished.text, add_special=False)
    second_prompt = (*prompt, *answer_tokens, *itself.runtime.tokenize("\nAgain:", add_special=False))
    before = d.decoded
    second = ask(second_prompt)
    prefill = next(e for e in second.events if isinstance(e, PrefillDone))
    assert prefill.cached_tokens > len(prompt) // 2  # the main model's slot was reused
    # the draft decoded what it lacked and its drafts, not the whole second prompt again
    assert d.decoded - before < len(second_prompt) - len(prompt) + 2 * second.finished.metrics.draft_n + 40
    assert second.finished.metrics.draft_n_accepted > 0
    draft_in_step(itself)


def test_random_draft_is_rejected_yet_the_text_is_the_same(smollm2: Path, random_draft: Path,
                                                           plain: BatchScheduler) -> None:
    prompts = [copy_prompt(plain, p) for p in (PASSAGES[0], PASSAGES[1])]
    s = load(smollm2, 2, random_draft)
    try:
        for a, b in zip(together(plain, prompts), together(s, prompts), strict=True):
            check_same(a, b)
        snap = s.snapshot()
        assert snap.draft_n_accepted <= 0.2 * snap.draft_n
        draft_in_step(s)
    finally:
        s.close()


def test_another_vocabulary_is_refused_and_the_slots_run_without_it(smollm2: Path, tmp_path: Path) -> None:
    other = write_scripted(tmp_path / "qwen-draft.gguf", vocab_dir() / "ggml-vocab-qwen2.gguf", [100, 101, 102])
    loaded = load_batch_model(smollm2, SETTINGS, 1)
    try:
        with pytest.raises(DraftModelError, match="qwen-draft.gguf cannot draft for this model: .*same tokenizer"):
            SlotDraftModel.load(other, loaded.runtime)
    finally:
        loaded.runtime.close()
    s = open_scheduler(ServeOptions(model=smollm2, settings=SETTINGS, parallel=1,
                                    speculation=Speculation.from_flag(str(other))))
    try:
        assert s.speculation_note.startswith("qwen-draft.gguf cannot draft for this model")
        assert s.draft_model is None and s.snapshot().speculative == "off"
        answer = submit(s, copy_prompt(s, PASSAGES[0]), replace(GREEDY, max_tokens=8)).answer()
        assert isinstance(answer.events[-1], Finished) and answer.finished.metrics.draft_n == 0
    finally:
        s.close()
