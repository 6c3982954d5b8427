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

import numpy as np
from gguf import GGUFValueType, GGUFWriter, TokenType

from prefill.bench.tiny_model import write_tiny_llama
from prefill.engine.request import ChatRequest

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
    def edit(w: GGUFWriter) -> None:
        w.kv_data[0].pop(key, None)  # replaced, without the writer's warning
        w.add_key_value(key, value, vtype, sub_type)

    return edit


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


# --- the tiny llama as another architecture -------------------------------------------------------
N_LAYER, N_EMBD, HEAD = 2, 64, 16  # write_tiny_llama's defaults: 4 heads of 16


def _as_arch(arch: str, *edits: Edit) -> Edit:
    """The tiny llama's keys renamed to `arch`'s, then `edits` (which name keys as `arch`'s)."""

    def edit(w: GGUFWriter) -> None:
        kv = w.kv_data[0]
        for key in [k for k in kv if k.startswith("llama.")]:
            kv[f"{arch}.{key.removeprefix('llama.')}"] = kv.pop(key)
        kv["general.architecture"].value = arch
        for e in edits:
            e(w)

    return edit


def _tensor(name: str, shape: tuple[int, ...], f32: bool) -> Edit:
    """Add (or replace) tensor `name`, in numpy's order (the last number is the first GGUF dimension)."""

    def edit(w: GGUFWriter) -> None:
        w.tensors[0].pop(name, None)
        a = np.random.default_rng(1).standard_normal(shape, dtype=np.float32) * 0.5
        w.add_tensor(name, a if f32 else a.astype(np.float16))

    return edit


def _each_layer(*names_shapes: tuple[str, tuple[int, ...]], f32: bool = False) -> Edit:
    """A tensor per layer for each (name, shape); F16 but for vectors (norms) unless `f32`."""
    return _all(*(_tensor(f"blk.{i}.{n}", shape, f32 or len(shape) == 1)
                  for i in range(N_LAYER) for n, shape in names_shapes))


def _drop_tensor(name: str) -> Edit:
    return lambda w: w.tensors[0].pop(name, None)


QK_NORMS = _each_layer(("attn_q_norm.weight", (HEAD,)), ("attn_k_norm.weight", (HEAD,)))  # qwen3, gemma3
GEMMA_NORMS = _each_layer(("post_attention_norm.weight", (N_EMBD,)), ("post_ffw_norm.weight", (N_EMBD,)))


def _gemma3(*edits: Edit) -> Edit:
    return _as_arch("gemma3", _drop_tensor("output.weight"), GEMMA_NORMS, QK_NORMS,
                    _set("gemma3.attention.sliding_window", 512, U32), *edits)


def _mamba2(d_inner: int = 128, n_group: int = 1, dt_rank: int = 4, d_state: int = 8, d_conv: int = 4) -> Edit:
    """The tiny llama's vocabulary on Mamba-2 layers (every tensor written at the shape llama.cpp expects)."""

    def edit(w: GGUFWriter) -> None:
        kv = w.kv_data[0]
        for key in [k for k in kv if k.startswith("llama.")]:
            del kv[key]
        kv["general.architecture"].value = "mamba2"
        for name, v in (("context_length", 2048), ("embedding_length", N_EMBD), ("block_count", N_LAYER),
                        ("feed_forward_length", 0), ("attention.head_count", 0), ("ssm.conv_kernel", d_conv),
                        ("ssm.inner_size", d_inner), ("ssm.state_size", d_state), ("ssm.time_step_rank", dt_rank),
                        ("ssm.group_count", n_group)):
            w.add_key_value(f"mamba2.{name}", v, U32)
        w.add_key_value("mamba2.attention.layer_norm_rms_epsilon", 1e-5, F32)
        for name in [n for n in w.tensors[0] if n.startswith("blk.")]:
            del w.tensors[0][name]
        conv = d_inner + 2 * n_group * d_state
        _each_layer(("attn_norm.weight", (N_EMBD,)), ("ssm_in.weight", (d_inner + conv + dt_rank, N_EMBD)),
                    ("ssm_conv1d.weight", (conv, d_conv)), ("ssm_conv1d.bias", (conv,)),
                    ("ssm_dt.bias", (dt_rank,)), ("ssm_a", (dt_rank, 1)), ("ssm_d", (dt_rank, 1)),
                    ("ssm_norm.weight", (n_group, d_inner // n_group)), ("ssm_out.weight", (N_EMBD, d_inner)),
                    f32=True)(w)  # ggml's SSM ops take F32 only

    return edit


def _ssm_keys(arch: str, inner: int) -> Edit:
    return _all(*(_set(f"{arch}.ssm.{k}", v, U32) for k, v in (
        ("conv_kernel", 4), ("inner_size", inner), ("state_size", 8), ("time_step_rank", 4), ("group_count", 1))))



def _minimax_m2(gating: int) -> Edit:
    """Two experts, one used per token, routed by `gating` (llama-hparams.h: 1 to 4)."""
    experts = _each_layer(("attn_q_norm.weight", (N_EMBD,)), ("attn_k_norm.weight", (N_EMBD,)),
                          ("ffn_gate_inp.weight", (2, N_EMBD)), ("ffn_gate_exps.weight", (2, 128, N_EMBD)),
                          ("ffn_down_exps.weight", (2, N_EMBD, 128)), ("ffn_up_exps.weight", (2, 128, N_EMBD)),
                          ("exp_probs_b.bias", (2,)))
    dense = [_drop_tensor(f"blk.{i}.ffn_{n}.weight") for i in range(N_LAYER) for n in ("gate", "up", "down")]
    return _as_arch("minimax-m2", *dense, experts, *(_set(f"minimax-m2.{k}", v, U32) for k, v in (
        ("expert_count", 2), ("expert_used_count", 1), ("expert_feed_forward_length", 128),
        ("expert_gating_func", gating))))

def _deepseek2(rope: int) -> Edit:
    return _as_arch("deepseek2", *(_set(f"deepseek2.{k}", v, U32) for k, v in (
        ("attention.q_lora_rank", 16), ("attention.kv_lora_rank", 16), ("expert_feed_forward_length", 32),
        ("expert_shared_count", 1), ("rope.dimension_count", rope))))


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
    Case("llama_value_length", "llama keys 16 wide, values 8 (GGML_ASSERT(n_embd_head == n_embd_head_k), llama.cpp)",
         _all(_set("llama.attention.value_length", 8, U32), _each_layer(("attn_v.weight", (32, N_EMBD)))),
         "keys are 16 wide and its values 8"),
    Case("qwen2_rope_part", "qwen2 RoPE on 8 of 16 (GGML_ASSERT(n_embd_head == n_rot), models/qwen2.cpp)",
         _as_arch("qwen2", _set("qwen2.rope.dimension_count", 8, U32)), "RoPE turns 8 of each attention head's 16"),
    Case("qwen3_rope_part", "qwen3 RoPE on 8 of 16 (GGML_ASSERT(n_embd_head == n_rot), models/qwen3.cpp)",
         _as_arch("qwen3", QK_NORMS, _set("qwen3.rope.dimension_count", 8, U32)), "RoPE turns 8"),
    Case("qwen3", "nothing wrong: the control for the qwen3 writer", _as_arch("qwen3", QK_NORMS), "", refused_by=""),
    Case("qwen2_heads_narrow", "qwen2, 4 heads of 8 in a 64-wide model (GGML_ASSERT in ggml_reshape_3d)",
         _as_arch("qwen2", *(_set(f"qwen2.{k}", 8, U32) for k in ("attention.key_length", "attention.value_length",
                                                                    "rope.dimension_count")),
                  _each_layer(("attn_k.weight", (32, N_EMBD)), ("attn_v.weight", (32, N_EMBD)))),
         "4 attention heads of 8 do not make up its width 64"),
    Case("kv_heads_uneven", "4 query heads over 3 key/value heads (GGML_ASSERT(ggml_can_mul_mat))",
         _all(_set("llama.attention.head_count_kv", 3, U32),
              _each_layer(("attn_k.weight", (48, N_EMBD)), ("attn_v.weight", (48, N_EMBD)))),
         "4 attention heads, not a multiple of its 3"),
    Case("gemma3_sliding", "nothing wrong: gemma3 with a sliding window, the control for the gemma3 writer",
         _gemma3(), "", refused_by=""),
    Case("gemma3_no_sliding_layer", "gemma3 sliding-window pattern 1 (GGML_ASSERT(hparams.is_swa_any()))",
         _gemma3(_set("gemma3.attention.sliding_window_pattern", 1, U32)), "pattern 1 leaves no layer"),
    Case("gemma2_sliding_flags_off", "gemma2 flags no layer sliding-window (GGML_ASSERT(hparams.is_swa_any()))",
         _as_arch("gemma2", _drop_tensor("output.weight"), GEMMA_NORMS,
                  _set("gemma2.attention.sliding_window_pattern", [False, False], ARR, GGUFValueType.BOOL)),
         "marks no layer as sliding-window"),
    Case("granitehybrid_ssm_width", "granitehybrid state-space width not twice the model's (GGML_ASSERT at load)",
         _as_arch("granitehybrid", _ssm_keys("granitehybrid", 100)), "100 wide, where granitehybrid needs twice"),
    Case("mamba2", "nothing wrong: the control for the Mamba-2 writer", _mamba2(), "", refused_by=""),
    Case("mamba2_groups_uneven", "Mamba-2 width 120 in 7 groups (GGML_ASSERT(d_inner % n_group == 0))",
         _mamba2(d_inner=120, n_group=7), "width 120 does not split into 7 groups"),
    Case("mamba2_heads_uneven", "Mamba-2 width 128 in 7 heads (GGML_ASSERT(d_inner % n_head == 0))",
         _mamba2(dt_rank=7), "width 128 does not split into 7 heads"),
    Case("deepseek2_all_rope", "deepseek2 RoPE on the whole key (GGML_ASSERT(n_embd_head_qk_nope >= 1) at load)",
         _deepseek2(rope=16), "leaving none unrotated"),
    Case("glm4moe_without_experts", "glm4moe with no expert_count (GGML_ASSERT(hparams.n_expert > 0) at load)",
         _as_arch("glm4moe", _set("glm4moe.expert_feed_forward_length", 32, U32),
                  _set("glm4moe.expert_shared_count", 1, U32)), "gives no experts"),
    Case("ernie_moe_step_zero", "ernie4_5-moe experts every 0 layers (GGML_ASSERT(n_moe_layer_step > 0))",
         _as_arch("ernie4_5-moe", *(_set(f"ernie4_5-moe.{k}", v, U32) for k, v in (
             ("expert_feed_forward_length", 32), ("interleave_moe_layer_step", 0), ("leading_dense_block_count", 2)))),
         "experts come every 0 layers"),
    Case("minimax_m2", "nothing wrong: the control for the minimax-m2 writer (sigmoid gating)", _minimax_m2(2), "",
         refused_by=""),
    Case("minimax_m2_gating_unknown", "minimax-m2 expert gating function 7 (GGML_ABORT in build_moe_ffn)",
         _minimax_m2(7), "expert gating function is 7"),
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
    from prefill.engine.errors import EngineError
    from prefill.engine.events import PrefillDone
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.message import Message
    from prefill.engine.settings import LoadSettings, SamplingSettings

    try:
        engine = ChatEngine.load(path, LoadSettings(n_ctx=n_ctx, n_gpu_layers="none"))
    except EngineError as e:
        return str(e), 0
    prompt_tokens = 0
    try:
        ask = ChatRequest.of([Message("user", prompt)], SamplingSettings(temperature=0.0, max_tokens=4))
        for ev in engine.stream(ask):
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
