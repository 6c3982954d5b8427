"""Chats through real tokenizers and templates (llama.cpp's vocabulary files) with scripted weights:
reasoning shown apart, formats chosen for files without a template, no marker in any answer."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefill.engine.events import Finished, PrefillDone, Token
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.engine.settings import LoadSettings, SamplingSettings
from tests.engine.vocab_models import THINKING_TEMPLATE, Vocab, vocab_dir, write_scripted

HOT = SamplingSettings(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0, max_tokens=64, seed=7)
LOAD = LoadSettings(n_ctx=512, n_gpu_layers="none")
MARKERS = ("<|im_end|>", "<|im_start|>", "<turn|>", "<|turn>", "<|eot_id|>", "<|channel>", "<channel|>",
           "<think>", "</think>", "<|end|>", "<|END_OF_TURN_TOKEN|>", "User:")


@pytest.fixture(scope="module")
def vocabs() -> Path:
    return vocab_dir()


def chat(model: Path, messages: list[Message], options: TemplateOptions | None = None,
         sampling: SamplingSettings = HOT) -> tuple[ChatEngine, list[object]]:
    e = ChatEngine.load(model, LOAD)
    return e, list(e.stream(ChatRequest.of(messages, sampling, options=options)))


def scripted(tmp_path: Path, vocabs: Path, name: str, prompt: str, answer: list[int], end: str | None,
             template: str | None = None, keep_template: bool = True) -> Path:
    v = Vocab(vocabs / f"ggml-vocab-{name}.gguf")
    try:
        chain = [v.tokenize(prompt, add_bos=True)[-1], *answer] + ([v.token(end)] if end else [])
    finally:
        v.close()
    return write_scripted(tmp_path / f"{name}.gguf", vocabs / f"ggml-vocab-{name}.gguf", chain, template, keep_template)


def tokens(vocabs: Path, name: str, text: str, special: bool = True) -> list[int]:
    v = Vocab(vocabs / f"ggml-vocab-{name}.gguf")
    try:
        return v.tokenize(text, special)
    finally:
        v.close()


def split(events: list[object]) -> tuple[str, str, Finished]:
    toks = [e for e in events if isinstance(e, Token)]
    fin = events[-1]
    assert isinstance(fin, Finished)
    return "".join(t.text for t in toks if t.reasoning), "".join(t.text for t in toks if not t.reasoning), fin


@pytest.fixture
def closing() -> Iterator[list[ChatEngine]]:
    engines: list[ChatEngine] = []
    yield engines
    for e in engines:
        e.close()


def test_think_tags_split_across_tokens_with_an_opened_prompt(tmp_path: Path, vocabs: Path, closing: list) -> None:
    answer = tokens(vocabs, "qwen2", "Two and two make four.</think>The answer: 4!")
    opened = "<|im_start|>assistant\n<think>\n"
    model = scripted(tmp_path, vocabs, "qwen2", opened, answer, "<|im_end|>", THINKING_TEMPLATE)
    e, events = chat(model, [Message("user", "What is 2+2?")])
    closing.append(e)
    reasoning, text, fin = split(events)
    assert reasoning == "Two and two make four."
    assert text == "The answer: 4!"
    assert (fin.text, fin.reasoning, fin.reason) == ("The answer: 4!", "Two and two make four.", "stop")
    m = fin.metrics
    assert 0 < m.reasoning_tokens < m.completion_tokens
    assert m.answer_ttft_ms > m.ttft_ms > 0
    assert e.format.takes_thinking_switch


def test_thinking_switched_off_goes_straight_to_the_answer(tmp_path: Path, vocabs: Path, closing: list) -> None:
    answer = tokens(vocabs, "qwen2", "Four!")
    model = scripted(tmp_path, vocabs, "qwen2", "</think>\n\n", answer, "<|im_end|>", THINKING_TEMPLATE)
    e, events = chat(model, [Message("user", "2+2?")], TemplateOptions(think=False))
    closing.append(e)
    reasoning, text, fin = split(events)
    assert (reasoning, text, fin.metrics.reasoning_tokens) == ("", "Four!", 0)


def test_gemma4_own_template_thought_channel(tmp_path: Path, vocabs: Path, closing: list) -> None:
    answer = tokens(vocabs, "gemma-4", "<|channel>thought Two plus two makes four.<channel|>It is 4!")
    model = scripted(tmp_path, vocabs, "gemma-4", "<|turn>model\n", answer, "<turn|>")
    e, events = chat(model, [Message("system", "Be brief."), Message("user", "2+2?")], TemplateOptions(think=True))
    closing.append(e)
    reasoning, text, fin = split(events)
    assert e.format.from_model
    assert reasoning == "Two plus two makes four."
    assert text == "It is 4!"
    assert not any(mk in fin.text for mk in MARKERS)


def test_history_reasoning_is_dropped_where_the_template_drops_it(tmp_path: Path, vocabs: Path, closing: list) -> None:
    answer = tokens(vocabs, "gemma-4", "Sure!")
    model = scripted(tmp_path, vocabs, "gemma-4", "<channel|>", answer, "<turn|>")
    e = ChatEngine.load(model, LOAD)
    closing.append(e)
    history = [Message("user", "2+2?"), Message("assistant", "4", reasoning="SECRET-THOUGHT"), Message("user", "ok")]
    prompt = e.render(history, TemplateOptions(think=False))
    assert "SECRET-THOUGHT" not in prompt and "4" in prompt


@pytest.mark.parametrize("name, prompt_end, end", [
    ("phi-3", "<|user|>\nHow are you?<|end|>\n<|assistant|>\n", "<|end|>"),
    ("command-r", "<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
])
def test_published_templates_in_vocab_files_stream(
    tmp_path: Path, vocabs: Path, closing: list, name: str, prompt_end: str, end: str
) -> None:
    answer = tokens(vocabs, name, "Fine, thanks!")
    model = scripted(tmp_path, vocabs, name, prompt_end, answer, end)
    e, events = chat(model, [Message("user", "How are you?")])
    closing.append(e)
    _, text, fin = split(events)
    assert e.format.name == "template"
    assert e.render([Message("user", "How are you?")]).endswith(prompt_end)
    assert (text, fin.reason) == ("Fine, thanks!", "stop")


def test_no_template_llama3_vocab_gets_the_llama3_format(tmp_path: Path, vocabs: Path, closing: list) -> None:
    answer = tokens(vocabs, "llama-bpe", "Hi there!")
    model = scripted(tmp_path, vocabs, "llama-bpe", "<|end_header_id|>\n\n", answer, "<|eot_id|>", keep_template=False)
    e, events = chat(model, [Message("system", "Be kind."), Message("user", "Hello")])
    closing.append(e)
    _, text, fin = split(events)
    assert e.format.name == "llama3" and not e.format.from_model
    assert "no chat template" in e.format.label
    assert "<|start_header_id|>user<|end_header_id|>" in e.render([Message("user", "Hello")])
    assert (text, fin.reason) == ("Hi there!", "stop")
    # Written as text instead of the special token, the marker still ends the answer (a marker's
    # text has two '|', which a scripted model cannot write: checked on the matcher the engine uses).
    assert {"<|eot_id|>", "<|start_header_id|>"} <= set(e.format.stops)


def test_base_model_gets_a_plain_transcript_and_says_so(tmp_path: Path, vocabs: Path, closing: list) -> None:
    answer = tokens(vocabs, "llama-spm", "Paris is the capital.\nUser:")
    model = scripted(tmp_path, vocabs, "llama-spm", "Assistant:", answer, None, keep_template=False)
    e, events = chat(model, [Message("user", "Capital of France?")])
    closing.append(e)
    _, text, fin = split(events)
    assert e.format.is_base and "base model" in e.format.label
    assert text == "Paris is the capital."
    assert fin.reason == "stop"


def test_cli_json_reports_format_and_reasoning(tmp_path: Path, vocabs: Path) -> None:
    answer = tokens(vocabs, "llama-spm", "Paris.\nUser:")
    base = scripted(tmp_path, vocabs, "llama-spm", "Assistant:", answer, None, keep_template=False)
    think = tokens(vocabs, "qwen2", "Two and two make four.</think>The answer: 4!")
    opened = "<|im_start|>assistant\n<think>\n"
    thinker = scripted(tmp_path, vocabs, "qwen2", opened, think, "<|im_end|>", THINKING_TEMPLATE)
    rows = {}
    for model in (base, thinker):
        done = subprocess.run(
            [sys.executable, "-m", "prefill", "chat", "--model", str(model), "--ctx", "512", "--gpu-layers", "none",
             "--prompt", "hi", "--json", "--think"],
            capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, done.stderr
        rows[model.stem] = (json.loads(done.stdout.strip().splitlines()[-1]), done.stderr)
    row, err = rows["llama-spm"]
    assert row["chat_format"] == "base" and "base model" in err and row["answer"] == "Paris."
    row, _ = rows["qwen2"]
    assert row["chat_format"] == "template"
    assert (row["reasoning"], row["answer"]) == ("Two and two make four.", "The answer: 4!")
    assert 0 < row["reasoning_tokens"] < row["completion_tokens"]


def test_prefill_figures_say_what_was_evaluated_when_earlier_reasoning_is_dropped(
    tmp_path: Path, vocabs: Path, closing: list
) -> None:
    answer = tokens(vocabs, "qwen2", "Two and two make four.</think>The answer: 4!")
    src = THINKING_TEMPLATE
    model = scripted(tmp_path, vocabs, "qwen2", "<|im_start|>assistant\n<think>\n", answer, "<|im_end|>", src)
    e = ChatEngine.load(model, LOAD)
    closing.append(e)
    history = [Message("user", "2+2?")]
    fin = split(list(e.stream(ChatRequest.of(history, HOT))))[2]
    history += [Message("assistant", fin.text, fin.reasoning), Message("user", "again?")]
    events = list(e.stream(ChatRequest.of(history, HOT)))
    prefill = next(ev for ev in events if isinstance(ev, PrefillDone))
    # The cache held the thinking; the new prompt drops it: only what follows the first difference is read.
    assert 0 < prefill.cached_tokens < prefill.prompt_tokens
    assert prefill.evaluated_tokens == prefill.prompt_tokens - prefill.cached_tokens
