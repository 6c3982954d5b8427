"""Scripted reasoning models of three families, for the thinking budget: each thinks a fixed text,
and its script goes on from the close a spent budget writes (`thinking_budget.close_text`) to
its answer, so a budget of N gives N thoughts, the close, then the scripted answer.

- "qwen": Qwen2's tokenizer, ChatML and `<think>…</think>`, the thinking opened by the template
  (which also takes the thinking switch);
- "gemma": Gemma 4's tokenizer and its own template, the model opening `<|channel>thought`;
- "command-r": Command R's tokenizer and `<|START_THINKING|>…<|END_THINKING|>` written as text
  (many tokens each), the thinking opened by the template.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefill.engine.prompt.thinking_budget import close_text
from tests.engine.vocab_models import THINKING_TEMPLATE, Vocab, vocab_dir, write_scripted

COMMAND_R_TEMPLATE = (
    "{%- for m in messages %}<|START_OF_TURN_TOKEN|>"
    "{% if m.role == 'user' %}<|USER_TOKEN|>{% else %}<|CHATBOT_TOKEN|>{% endif %}"
    "{{ m.content }}<|END_OF_TURN_TOKEN|>{% endfor -%}"
    "{%- if add_generation_prompt %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>{% endif -%}"
    "{#- a thinking ends with <|END_THINKING|> -#}"
)


@dataclass(frozen=True)
class Family:
    vocab: str
    template: str | None  # None: the vocabulary file's own
    prompt_end: str  # the prompt's last token's text, as the template writes it
    opens: str  # what the model writes to open its thinking ("" where the prompt opened it)
    thinking: str
    close_tag: str
    answer: str
    end: str  # the end-of-turn token


FAMILIES = {
    "qwen": Family("qwen2", THINKING_TEMPLATE, "assistant\n<think>\n", "",
                   "Two and two make four, as everyone knows.", "</think>", "It is 4!", "<|im_end|>"),
    "gemma": Family("gemma-4", None, "<|turn>model\n", "<|channel>thought",
                    " Two plus two makes four, surely.", "<channel|>", "It is 4!", "<turn|>"),
    "command-r": Family("command-r", COMMAND_R_TEMPLATE, "<|CHATBOT_TOKEN|><|START_THINKING|>", "",
                        "Two and two make four, as everyone knows.", "<|END_THINKING|>", "It is 4!",
                        "<|END_OF_TURN_TOKEN|>"),
}


@dataclass(frozen=True)
class BudgetThinker:
    path: Path
    family: Family
    thoughts: list[int]  # the thinking's tokens (after any opening the model writes)
    close: list[int]  # the tokens a spent budget feeds
    closes_itself: bool  # without a budget the script writes the whole thinking, closes it and answers


def write_budget_thinker(path: Path, name: str) -> BudgetThinker:
    """The scripted model of family `name` (see FAMILIES), at `path`."""
    f = FAMILIES[name]
    vocabs = vocab_dir()
    v = Vocab(vocabs / f"ggml-vocab-{f.vocab}.gguf")
    try:
        prompt_last = v.tokenize(f.prompt_end)[-1]
        opens = v.tokenize(f.opens) if f.opens else []
        thoughts = v.tokenize(f.thinking)
        close = v.tokenize(close_text(f.close_tag))
        answer = v.tokenize(f.answer)
        end = v.token(f.end)
    finally:
        v.close()
    # The script: a close written as text may repeat a token (`|` in <|END_THINKING|>) with other
    # successors; only its last token, fed by the budget, must lead on to the answer.
    whole = len(set(close)) == len(close) and not set(close) & {prompt_last, *opens, *thoughts, *answer, end}
    chain = [prompt_last, *opens, *thoughts, *(close if whole else close[-1:]), *answer, end]
    write_scripted(path, vocabs / f"ggml-vocab-{f.vocab}.gguf", chain, f.template)
    return BudgetThinker(path, f, thoughts, close, whole)
