"""Speculative decoding with a draft model: the plain greedy answer, token for token, and refusals
of a draft model whose vocabulary is not the main model's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.engine.errors import DraftModelError, ModelLoadError
from prefill.engine.events import Finished
from prefill.engine.gguf.header import read_header
from prefill.engine.llama.hardware import MachineMemory
from prefill.engine.llama.memory_fit import Fit, estimate_fit, fit_breakdown, with_draft
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.local.draft_model import DraftModel
from prefill.engine.message import Message
from prefill.engine.settings import LoadSettings, SamplingSettings
from tests.engine.draft_models import write_random_draft
from tests.engine.local.test_speculative import both, run, same
from tests.engine.vocab_models import vocab_dir, write_scripted

COPY = ("Repeat this exactly: the cat sat on the mat, the dog sat on the log, and the bird sat on the wall "
        "by the old stone gate.")
QUESTION = "Why is the sky blue? Answer in two sentences."
GREEDY = SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=80)


@pytest.fixture(scope="module")
def fa_engine(smollm2: Path) -> Iterator[ChatEngine]:
    e = ChatEngine.load(smollm2, LoadSettings(n_ctx=1024, n_gpu_layers="none", flash_attn="on"))
    yield e
    e.close()


@pytest.fixture(scope="module")
def random_draft(smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_random_draft(tmp_path_factory.mktemp("draft") / "random.gguf", smollm2)


@pytest.fixture
def engine(fa_engine: ChatEngine) -> Iterator[ChatEngine]:
    fa_engine.reset_cache()
    yield fa_engine
    fa_engine.speculative = "off"
    fa_engine.use_draft_model(None)


def same_as_plain(engine: ChatEngine, msgs: list[Message], sampling: SamplingSettings = GREEDY,
                  cancel_at: int = 0) -> tuple[Finished, Finished]:
    plain, fast = both(engine, msgs, sampling, cancel_at, mode="draft")
    same(plain, fast)
    assert engine.speculation_note == ""
    return plain.finished, fast.finished


# --- exactness ------------------------------------------------------------------------------------
@pytest.mark.parametrize("prompt", [COPY, QUESTION])
def test_smollm2_drafting_for_itself_is_exact_and_taken(engine: ChatEngine, smollm2: Path, prompt: str) -> None:
    engine.use_draft_model(smollm2)
    _, fast = same_as_plain(engine, [Message("user", prompt)])
    m = fast.metrics
    assert m.draft_n > 20
    assert m.draft_n_accepted >= 0.9 * m.draft_n  # a perfect draft: only near-ties may differ
    assert engine.draft_model is not None and engine.draft_model.token_seconds > 0  # its guesses, priced


def test_random_draft_is_rejected_yet_the_text_is_the_same(engine: ChatEngine, random_draft: Path) -> None:
    engine.use_draft_model(random_draft)
    _, fast = same_as_plain(engine, [Message("user", QUESTION)])
    m = fast.metrics
    assert m.draft_n > 0
    assert m.draft_n_accepted <= 0.2 * m.draft_n


def test_stop_string_and_max_tokens_with_a_draft(engine: ChatEngine, smollm2: Path) -> None:
    engine.use_draft_model(smollm2)
    plain, _ = same_as_plain(engine, [Message("user", COPY)])
    words = plain.text.split()
    assert len(words) > 6
    stop = words[5]
    stopped, _ = same_as_plain(engine, [Message("user", COPY)], SamplingSettings(
        temperature=0.0, repeat_penalty=1.0, max_tokens=80, stop=(stop,)))
    assert stopped.reason == "stop" and stop not in stopped.text
    short, _ = same_as_plain(engine, [Message("user", COPY)],
                             SamplingSettings(temperature=0.0, repeat_penalty=1.0, max_tokens=7))
    assert short.reason == "length" and short.metrics.completion_tokens == 7


def test_cancel_then_next_turn_reuses_both_caches(engine: ChatEngine, smollm2: Path) -> None:
    engine.use_draft_model(smollm2)
    first = [Message("user", COPY)]
    plain, fast = same_as_plain(engine, first, cancel_at=12)
    assert fast.reason == plain.reason == "cancelled"
    history = [*first, Message("assistant", fast.text), Message("user", "Now say it again.")]

    draft = engine.draft_model
    assert draft is not None
    decoded_before = draft.decoded
    r = run(engine, history, "draft")
    prefill, second = r.prefill, r.finished
    assert prefill.cached_tokens > 0  # the main model reused its cache
    # The draft model decoded only what it lacked, not the whole second prompt again.
    assert draft.decoded - decoded_before < prefill.prompt_tokens + second.metrics.completion_tokens
    assert second.metrics.draft_n_accepted > 0

    cached_fast = engine.cached_tokens
    engine.reset_cache()
    run(engine, first, "off", cancel_at=12)
    again = run(engine, history, "off").finished
    assert again.text == second.text
    assert engine.cached_tokens == cached_fast


def test_draft_mode_without_a_draft_model_says_why(engine: ChatEngine) -> None:
    f = run(engine, [Message("user", QUESTION)], "draft",
            SamplingSettings(temperature=0.0, max_tokens=4, repeat_penalty=1.0)).finished
    assert f.metrics.draft_n == 0
    assert "no draft model is loaded" in engine.speculation_note


def test_sampling_turns_draft_speculation_off(engine: ChatEngine, smollm2: Path) -> None:
    engine.use_draft_model(smollm2)
    f = run(engine, [Message("user", QUESTION)], "draft", SamplingSettings(temperature=0.7, max_tokens=4)).finished
    assert f.metrics.draft_n == 0
    assert "greedy sampling only" in engine.speculation_note


# --- refusals --------------------------------------------------------------------------------------
def test_another_vocabulary_is_refused_with_what_differs(engine: ChatEngine, tmp_path: Path) -> None:
    qwen = vocab_dir() / "ggml-vocab-qwen2.gguf"
    other = write_scripted(tmp_path / "qwen-draft.gguf", qwen, [100, 101, 102])
    with pytest.raises(DraftModelError) as e:
        engine.use_draft_model(other)
    msg = str(e.value)
    assert msg.startswith("qwen-draft.gguf cannot draft for this model: ")
    assert "151936 tokens and the main model's 49152" in msg or "tokenizer is" in msg
    assert "same tokenizer" in msg
    assert engine.draft_model is None


def test_a_file_that_is_not_gguf_is_refused_as_the_main_loader_words_it(engine: ChatEngine, tmp_path: Path,
                                                                         smollm2: Path) -> None:
    bad = tmp_path / "notes.gguf"
    bad.write_text("these are my notes, not a model")
    with pytest.raises(ModelLoadError) as main_err:
        ChatEngine.load(bad)
    engine.use_draft_model(smollm2)
    with pytest.raises(DraftModelError) as e:
        engine.use_draft_model(bad)
    assert str(e.value) == f"the draft model notes.gguf could not be loaded: {main_err.value}"
    assert engine.draft_model is not None and engine.draft_model.path == smollm2  # the loaded one stays
    with pytest.raises(DraftModelError, match="could not be loaded"):
        engine.use_draft_model(tmp_path / "missing.gguf")


# --- memory ----------------------------------------------------------------------------------------
def test_draft_memory_is_counted(engine: ChatEngine, random_draft: Path, smollm2: Path) -> None:
    assert engine.draft_memory_bytes == 0
    engine.use_draft_model(random_draft)
    draft = engine.draft_model
    assert isinstance(draft, DraftModel)
    assert engine.draft_memory_bytes == draft.runtime.model_bytes() + engine.n_ctx * draft.bytes_per_cell > 0
    engine.use_draft_model(None)
    assert engine.draft_memory_bytes == 0 and engine.draft_model is None

    memory = MachineMemory(16 << 30, 8 << 30)
    main, small = read_header(smollm2), read_header(random_draft)
    alone = estimate_fit(main, 2048, memory)
    d = estimate_fit(small, 2048, memory)
    both = with_draft(main, small, 2048, memory)
    assert both.fit == Fit.CPU_ONLY
    assert both.total == alone.total + d.total and both.draft == d.total
    assert both.ram_needed == alone.ram_needed + d.ram_needed
    assert "of which the draft model" in fit_breakdown(both)
    tight = MachineMemory(16 << 30, alone.ram_needed + (64 << 20) + d.ram_needed // 2)
    assert estimate_fit(main, 2048, tight).fit == Fit.CPU_ONLY
    assert with_draft(main, small, 2048, tight).fit == Fit.WONT_FIT  # the draft tips it over
