"""Hostile model files: the tiny llama of `prefill.bench.tiny_model`, each with one fault.

Each case is a file a person could download. `expect` is a piece of the error the
user must see; "" means the file is fine to load and the chat must run. llama.cpp
aborts the process on every one of the faulty files when nothing stops them first
(`benchmarks/fault_battery_models.py` shows what each does).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gguf import GGUFValueType, GGUFWriter, TokenType

from prefill.bench.tiny_model import write_tiny_llama

Edit = Callable[[GGUFWriter], None]
N_VOCAB = 512  # 5 special tokens, 256 byte tokens, 251 words: small and quick to load
TOKENS = "tokenizer.ggml.tokens"


@dataclass(frozen=True)
class Case:
    name: str
    fault: str
    edit: Edit
    expect: str  # a piece of the error the user sees; "" when the chat must work
    second_part: Edit | None = None  # set: the model is split in two files, this edits the second
    refused_by: str = "header"  # "header" (Prefill's check), "llama.cpp" (its own error), "chat", "" (loads)


def _set(key: str, value: object, vtype: GGUFValueType, sub_type: GGUFValueType | None = None) -> Edit:
    return lambda w: w.add_key_value(key, value, vtype, sub_type)


def _drop(*keys: str) -> Edit:
    def edit(w: GGUFWriter) -> None:
        for k in keys:
            w.kv_data[0].pop(k, None)

    return edit


def _tokens(change: Callable[[list[str | bytes]], None]) -> Edit:
    def edit(w: GGUFWriter) -> None:
        tokens = list(w.kv_data[0][TOKENS].value)
        change(tokens)
        w.kv_data[0][TOKENS].value = tokens

    return edit


def _all(*edits: Edit) -> Edit:
    def edit(w: GGUFWriter) -> None:
        for e in edits:
            e(w)

    return edit


def _duplicate(tokens: list[str | bytes]) -> None:
    tokens[300] = tokens[301]


def _duplicate_after_nul(tokens: list[str | bytes]) -> None:
    tokens[300], tokens[301] = b"dup\0one", b"dup\0two"  # C strings: both read as "dup"


def _byte_type_on_a_letter(w: GGUFWriter) -> None:
    tokens = w.kv_data[0][TOKENS].value
    types = list(w.kv_data[0]["tokenizer.ggml.token_type"].value)
    types[tokens.index("a")] = int(TokenType.BYTE)  # a byte token is "<0xXX>": llama.cpp reads chars 3-4
    w.kv_data[0]["tokenizer.ggml.token_type"].value = types


def _split(no: int, no_type: GGUFValueType) -> Edit:
    return _all(_set("split.no", no, no_type), _set("split.count", 2, GGUFValueType.UINT16),
                _set("split.tensors.count", 0, GGUFValueType.INT32))


def _empty_name_clash(tokens: list[str | bytes]) -> None:
    tokens[300], tokens[301] = "", "[EMPTY_300]"  # llama.cpp names the empty token "[EMPTY_300]"


def _no_byte_tokens(tokens: list[str | bytes]) -> None:
    for i, t in enumerate(tokens):
        if isinstance(t, str) and t.startswith("<0x"):
            tokens[i] = f"byte{i}"


U32, STR, F32, ARR = GGUFValueType.UINT32, GGUFValueType.STRING, GGUFValueType.FLOAT32, GGUFValueType.ARRAY
WRONG_TYPES = ("block_count_array", "block_count_float", "context_length_string", "head_count_string")

CASES: tuple[Case, ...] = (
    Case("block_count_array", "llama.block_count is an array", _set("llama.block_count", [2, 2], ARR, U32),
         "block_count is an array"),
    Case("block_count_float", "llama.block_count is a float", _set("llama.block_count", 2.0, F32),
         "block_count is a floating-point number"),
    Case("context_length_string", "llama.context_length is a string",
         _set("llama.context_length", "8k", STR), "context_length is a string"),
    Case("head_count_string", "llama.attention.head_count is a string",
         _set("llama.attention.head_count", "4", STR), "head_count is a string"),
    Case("block_count_zero", "no layers (GGML_ASSERT n_layer_all > 0)", _set("llama.block_count", 0, U32),
         "block_count is 0"),
    Case("block_count_too_many", "513 layers (GGML_ASSERT n_layer_all <= LLAMA_MAX_LAYERS)",
         _set("llama.block_count", 513, U32), "at most 512"),
    Case("expert_used_without_experts", "experts used, none present (GGML_ASSERT n_expert_used <= n_expert)",
         _set("llama.expert_used_count", 2, U32), "2 experts used per token of 0"),
    Case("too_many_experts", "2000 experts (GGML_ASSERT n_expert <= LLAMA_MAX_EXPERTS)",
         _all(_set("llama.expert_count", 2000, U32), _set("llama.expert_used_count", 2, U32)), "2000 experts"),
    Case("rope_scaling_unknown", "unknown RoPE scaling type (GGML_ASSERT != UNSPECIFIED)",
         _set("llama.rope.scaling.type", "bogus", STR), "unknown RoPE scaling type"),
    Case("duplicate_tokens", "two tokens spelled alike (GGML_ASSERT id_to_token.size() == token_to_id.size())",
         _tokens(_duplicate), "twice"),
    Case("duplicate_after_nul", "two tokens alike up to a NUL byte", _tokens(_duplicate_after_nul), "'dup' twice"),
    Case("empty_token_name_clash", "an empty token and one spelled as llama.cpp renames it",
         _tokens(_empty_name_clash), "'[EMPTY_300]' twice"),
    Case("spm_without_byte_tokens", "SentencePiece vocabulary without <0xXX> tokens (uncaught std::out_of_range)",
         _tokens(_no_byte_tokens), "byte tokens"),
    Case("no_tokenizer", "tokenizer.ggml.model = none (GGML_ABORT in tokenize)",
         _set("tokenizer.ggml.model", "none", STR), "no tokenizer"),
    Case("bos_and_eos_asked_but_missing", "a vocabulary asking for BOS and EOS it lacks (GGML_ASSERT in tokenize)",
         _all(_set("tokenizer.ggml.model", "gemma4", STR), _set("tokenizer.ggml.merges", ["a b"], ARR, STR),
              _drop("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"),
              _set("tokenizer.ggml.add_eos_token", True, GGUFValueType.BOOL)), "", refused_by=""),
    Case("template_renders_nothing", "a chat template that renders an empty prompt (sampling without logits)",
         _set("tokenizer.chat_template", "{% if false %}x{% endif %}", STR), "empty prompt", refused_by="chat"),
    Case("template_renders_spaces", "a chat template that renders only whitespace",
         _set("tokenizer.chat_template", "{% for m in messages %}  {% endfor %}", STR), "empty prompt",
         refused_by="chat"),
    Case("wordpiece_with_byte_tokens", "a WordPiece vocabulary with byte-typed tokens (GGML_ABORT in token_to_byte)",
         _set("tokenizer.ggml.model", "bert", STR), "WordPiece vocabulary types token 5 as a byte"),
    Case("rms_epsilon_nan", "a NaN norm epsilon (GGML_ASSERT(eps >= 0.0f) at the first decode)",
         _set("llama.attention.layer_norm_rms_epsilon", float("nan"), F32), "layer_norm_rms_epsilon is nan"),
    Case("split_no_wrong_type", "the second part of a split model numbered as int32 (GGML_ASSERT in gguf_get_val_u16)",
         _split(0, GGUFValueType.UINT16), "not uint16", second_part=_split(1, GGUFValueType.INT32)),
    Case("byte_type_on_a_letter", "a one-letter token typed BYTE: llama.cpp refuses it by itself (std::out_of_range "
         "caught in its load)", _byte_type_on_a_letter, "could not load", refused_by="llama.cpp"),
    Case("plain", "nothing wrong: the control", lambda w: None, "", refused_by=""),
)


def write_case(case: Case, folder: Path) -> Path:
    """Write `case`'s model file(s) into `folder`; the path to load."""
    if case.second_part is None:
        return write_tiny_llama(folder / f"{case.name}.gguf", n_vocab=N_VOCAB, context_length=2048, edit=case.edit)
    write_tiny_llama(folder / f"{case.name}-00002-of-00002.gguf", n_vocab=N_VOCAB, edit=case.second_part)
    return write_tiny_llama(folder / f"{case.name}-00001-of-00002.gguf", n_vocab=N_VOCAB, edit=case.edit)


def long_prompt(words: int) -> str:
    """`words` one-letter words: one token each in the tiny vocabulary ("\u2581a"…)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return " ".join(letters[i % 26] for i in range(words))


def chat_once(path: Path, n_ctx: int, prompt: str) -> tuple[str, int]:
    """Load `path` with a context of `n_ctx`, answer `prompt` (4 greedy tokens).

    Returns:
        The error text ("" when none) and the prompt's length in tokens (0 when it never got that far).
    """
    from prefill.engine.chat import ChatEngine
    from prefill.engine.errors import EngineError
    from prefill.engine.events import PrefillDone
    from prefill.engine.message import Message
    from prefill.engine.settings import LoadSettings, SamplingSettings

    try:
        engine = ChatEngine.load(path, LoadSettings(n_ctx=n_ctx, n_gpu_layers="none"))
    except EngineError as e:
        return str(e), 0
    prompt_tokens = 0
    try:
        for ev in engine.stream([Message("user", prompt)], SamplingSettings(temperature=0.0, max_tokens=4)):
            if isinstance(ev, PrefillDone):
                prompt_tokens = ev.prompt_tokens
    except EngineError as e:
        return str(e), prompt_tokens
    finally:
        engine.close()
    return "", prompt_tokens


def main(jobs: list[str]) -> None:
    """Run each job (JSON [path, n_ctx, words]) in this one process; a line before and after each,
    so that a crash names the job that caused it."""
    for job in jobs:
        path, n_ctx, words = json.loads(job)
        print(json.dumps({"start": job}), flush=True)
        error, prompt_tokens = chat_once(Path(path), n_ctx, long_prompt(words))
        print(json.dumps({"done": job, "error": error, "prompt_tokens": prompt_tokens}), flush=True)


if __name__ == "__main__":  # python -m tests.engine.hostile_models JOB...
    main(sys.argv[1:])
