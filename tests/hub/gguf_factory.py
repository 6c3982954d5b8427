"""Tiny, valid GGUF files for tests, written with the `gguf` package's GGUFWriter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGUFWriter


def write_tiny_gguf(
    path: Path,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    n_head_kv: int = 2,
    n_vocab: int = 32,
    token_len: int = 4,
    chat_template: bool = True,
    name: str = "tiny",
) -> Path:
    """A llama-shaped model of f32 tensors; `token_len` grows the header (long tokens)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    w = GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_block_count(n_layer)
    w.add_context_length(256)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(2 * n_embd)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_file_type(0)  # ALL_F32
    w.add_token_list([f"t{i}".ljust(token_len, "x") for i in range(n_vocab)])
    if chat_template:
        w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    rng = np.random.default_rng(0)

    def tensor(name: str, *shape: int) -> None:
        w.add_tensor(name, rng.standard_normal(shape).astype(np.float32))

    tensor("token_embd.weight", n_vocab, n_embd)
    for i in range(n_layer):
        tensor(f"blk.{i}.attn_q.weight", n_embd, n_embd)
        tensor(f"blk.{i}.ffn_up.weight", 2 * n_embd, n_embd)
    tensor("output.weight", n_vocab, n_embd)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
