"""Draft models for speculative decoding tests and benchmarks, written with a real model's tokenizer.

`write_random_draft`: a tiny llama with random weights, sure of its (wrong) guesses: every draft
is checked and almost none is taken, the worst case for acceptance. `write_replay_draft`: a tiny
llama whose output maps each token of a given text to the token after its first occurrence, so it
replays a known answer for the price of a model with one zero layer (a cheap, nearly perfect draft;
a token followed by different tokens in the text is guessed wrong after its first use).
Both carry the tokenizer of `vocab_path` (a GGUF model or vocabulary file) byte for byte, so
llama.cpp finds the vocabulary the main model has.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tests.engine.vocab_models import _F32, _STRING, _U32, _kv, _string, _tokenizer_kvs, _write_gguf

LOGIT_SCALE = 40.0


def _llama_kvs(vocab_path: Path, n_embd: int, name: str) -> tuple[list[bytes], int]:
    tok_kvs, n_vocab = _tokenizer_kvs(vocab_path)
    tok_kvs.pop("tokenizer.chat_template", None)
    tok_kvs.pop("general.name", None)
    kvs = [
        _kv("general.architecture", _STRING, _string("llama")),
        _kv("general.name", _STRING, _string(name)),
        *(_kv(f"llama.{k}", _U32, struct.pack("<I", v)) for k, v in (
            ("context_length", 8192), ("embedding_length", n_embd), ("block_count", 1),
            ("feed_forward_length", n_embd), ("attention.head_count", 4), ("attention.head_count_kv", 4),
            ("rope.dimension_count", n_embd // 4))),
        _kv("llama.attention.layer_norm_rms_epsilon", _F32, struct.pack("<f", 1e-5)),
        _kv("general.file_type", _U32, struct.pack("<I", 1)),
        *tok_kvs.values(),
    ]
    return kvs, n_vocab


def _write(path: Path, kvs: list[bytes], embd: np.ndarray, out: np.ndarray, layer: dict[str, np.ndarray]) -> Path:
    n_embd = embd.shape[1]
    ones = np.ones(n_embd, dtype=np.float32)
    tensors = [("token_embd.weight", embd), ("output_norm.weight", ones), ("output.weight", out),
               ("blk.0.attn_norm.weight", ones), ("blk.0.ffn_norm.weight", ones)]
    tensors += [(f"blk.0.{n}.weight", w) for n, w in layer.items()]
    _write_gguf(path, kvs, tensors)
    return path


def write_random_draft(path: Path, vocab_path: Path, seed: int = 0, n_embd: int = 64) -> Path:
    """A one-layer llama with random weights and `vocab_path`'s tokenizer. Its output layer is
    scaled so that its top token is nearly certain: it always drafts, and is nearly always wrong."""
    kvs, n_vocab = _llama_kvs(vocab_path, n_embd, "prefill-random-draft")
    rng = np.random.default_rng(seed)

    def rand(*shape: int, std: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float16)

    layer = {n: rand(n_embd, n_embd, std=0.1) for n in
             ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}
    return _write(path, kvs, rand(n_vocab, n_embd), rand(n_vocab, n_embd, std=6.0), layer)


def write_replay_draft(path: Path, vocab_path: Path, text: Sequence[int]) -> Path:
    """A one-layer llama (attention and feed-forward zero) with `vocab_path`'s tokenizer that, after
    each token of `text`, guesses the token that followed its first occurrence there."""
    successor: dict[int, int] = {}
    for a, b in zip(text, text[1:]):
        successor.setdefault(a, b)
    states = list(successor)
    n_embd = max(64, -(-len(states) // 32) * 32)
    kvs, n_vocab = _llama_kvs(vocab_path, n_embd, "prefill-replay-draft")
    embd = np.zeros((n_vocab, n_embd), dtype=np.float16)
    out = np.zeros((n_vocab, n_embd), dtype=np.float16)
    for k, tok in enumerate(states):
        embd[tok, k] = 1.0
        out[successor[tok], k] = LOGIT_SCALE
    zeros = np.zeros((n_embd, n_embd), dtype=np.float16)
    layer = {n: zeros for n in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}
    return _write(path, kvs, embd, out, layer)
