"""Write small random-weight llama GGUF models with the `gguf` package.

The benchmark uses one (2 layers, 64 wide, 32k vocabulary: ~1 ms a token on a
CPU, what a 1B model costs on a fast GPU, so Python overhead shows); the tests
use them to try chat templates, including hostile ones, without a real model.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Callable
from pathlib import Path

import numpy as np
from gguf import GGUFWriter, TokenType

# A ChatML template of our own: tiny models speak the format most small chat models use.
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

SPECIAL = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]


def _vocab(n_vocab: int) -> tuple[list[str], list[float], list[int]]:
    tokens = list(SPECIAL)
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL, TokenType.CONTROL, TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [TokenType.BYTE] * 256
    letters = string.ascii_lowercase
    words = ("\u2581" + "".join(p) for n in itertools.count(1) for p in itertools.product(letters, repeat=n))
    plain = (("".join(p)) for n in itertools.count(1) for p in itertools.product(letters, repeat=n))
    while len(tokens) < n_vocab:
        tokens.append(next(words))
        types.append(TokenType.NORMAL)
        if len(tokens) < n_vocab:
            tokens.append(next(plain))
            types.append(TokenType.NORMAL)
    scores = [0.0] * len(SPECIAL) + [-1000.0] * 256 + [-float(i) for i in range(n_vocab - len(SPECIAL) - 256)]
    return tokens, scores, [int(t) for t in types]


def write_tiny_llama(
    path: str | Path,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    n_vocab: int = 32000,
    n_ff: int = 128,
    context_length: int = 8192,
    chat_template: str | None = CHATML,
    seed: int = 0,
    edit: Callable[[GGUFWriter], None] | None = None,
    name: str = "prefill-tiny",
    weight_scale: float = 0.5,
) -> Path:
    """A random-weight llama model that llama.cpp loads and runs (it talks nonsense).

    `edit` may change the writer's metadata before it is written (the tests' hostile files);
    `name` is its `general.name` (tests give hostile ones). `weight_scale`: the weights' standard
    deviation (smaller: calmer activations, so a cached prefix and a fresh one agree on the next token).
    """
    path = Path(path)
    rng = np.random.default_rng(seed)
    w = GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_context_length(context_length)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(1)  # mostly F16
    tokens, scores, types = _vocab(n_vocab)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(4)  # <|im_end|> ends a ChatML turn
    w.add_add_bos_token(True)
    if chat_template is not None:
        w.add_chat_template(chat_template)

    def t(name: str, *shape: int, f32: bool = False) -> None:
        a = rng.standard_normal(shape, dtype=np.float32) * weight_scale
        w.add_tensor(name, a if f32 else a.astype(np.float16))

    t("token_embd.weight", n_vocab, n_embd)
    t("output_norm.weight", n_embd, f32=True)
    t("output.weight", n_vocab, n_embd)
    for i in range(n_layer):
        b = f"blk.{i}."
        t(b + "attn_norm.weight", n_embd, f32=True)
        t(b + "attn_q.weight", n_embd, n_embd)
        t(b + "attn_k.weight", n_embd, n_embd)
        t(b + "attn_v.weight", n_embd, n_embd)
        t(b + "attn_output.weight", n_embd, n_embd)
        t(b + "ffn_norm.weight", n_embd, f32=True)
        t(b + "ffn_gate.weight", n_ff, n_embd)
        t(b + "ffn_up.weight", n_ff, n_embd)
        t(b + "ffn_down.weight", n_embd, n_ff)
    if edit is not None:
        edit(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
