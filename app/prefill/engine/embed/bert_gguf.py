"""A Hugging Face BERT encoder (safetensors + tokenizer.json) written as llama.cpp's `bert` GGUF.

What llama.cpp's `bert` architecture reads (src/llama-arch.cpp's tensor names, src/llama-model.cpp's
hyper-parameters, src/llama-vocab.cpp's WordPiece tokenizer), written with the `gguf` package:

- the vocabulary in llama.cpp's "phantom space" spelling: a word-initial piece gains U+2581 in front,
  a continuation piece (`##ing`) loses its `##`, special tokens stay as they are;
- `tokenizer.ggml.model = "bert"` with the special ids and the `[CLS] text [SEP]` framing;
- the pooling type from sentence-transformers' `1_Pooling/config.json` (mean, CLS or last token),
  or RANK with a classification head for a reranker;
- 2-D weights in float16, norms, biases and the position and token-type embeddings in float32
  (as llama.cpp's own converter keeps them).

A tensor the converter has no name for is refused, never dropped: a variant with extra weights must
not load as plain BERT.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from prefill.engine.embed.checkpoint import Checkpoint
from prefill.engine.embed.errors import ConversionError

PHANTOM_SPACE = "\u2581"
_LAYER = re.compile(r"encoder\.layer\.(\d+)\.(.+)")
# Inside a layer: the checkpoint's name -> llama.cpp's (LLM_ARCH_BERT's tensors in llama-arch.cpp).
_LAYER_NAMES = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
_TOP_NAMES = {
    "embeddings.word_embeddings": "token_embd",
    "embeddings.token_type_embeddings": "token_types",
    "embeddings.position_embeddings": "position_embd",
    "embeddings.LayerNorm": "token_embd_norm",
    "pooler.dense": "cls",  # kept only for a reranker, whose head reads the pooled [CLS]
}
_KEEP_F32 = ("token_types", "position_embd")  # llama.cpp's converter keeps these in float32
_POOLING_MODES = (  # sentence-transformers' flag -> gguf.PoolingType
    ("pooling_mode_mean_tokens", gguf.PoolingType.MEAN),
    ("pooling_mode_cls_token", gguf.PoolingType.CLS),
    ("pooling_mode_lasttoken", gguf.PoolingType.LAST),
)


@dataclass(frozen=True)
class RankHead:
    """A reranker's classification head over the pooled [CLS]: `weight` is (labels, n_embd)."""

    weight: np.ndarray
    bias: np.ndarray


def convert_bert(
    source: Path, out: Path, name: str, license_name: str = "", rank_head: RankHead | None = None,
) -> Path:
    """Write the BERT checkpoint at `source` (a folder or a zip) as a GGUF at `out`, atomically: the
    file appears whole or not at all.

    Args:
        source: the checkpoint: config.json, model.safetensors, tokenizer.json, and for a sentence
            embedding model 1_Pooling/config.json.
        out: the GGUF to write; its folder must exist.
        name: `general.name`.
        license_name: `general.license`, when known.
        rank_head: a classification head, which makes the GGUF a reranker (pooling RANK).

    Raises:
        ConversionError: a file is missing or malformed, or the model is not a BERT the converter knows.
    """
    with Checkpoint(source) as ckpt:
        config = _config(ckpt)
        tokenizer = ckpt.json("tokenizer.json")
        pooling = gguf.PoolingType.RANK if rank_head is not None else _pooling(ckpt)
        tensors = ckpt.tensors()
        tmp = out.with_name(f".{out.name}.{os.getpid()}.part")
        try:
            w = gguf.GGUFWriter(tmp, "bert")
            _write_metadata(w, config, name, license_name, pooling)
            _write_vocabulary(w, tokenizer, config)
            _write_tensors(w, tensors, config, rank_head)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
            os.replace(tmp, out)
        except OSError as e:
            raise ConversionError(f"cannot write {out}: {e.strerror or e}") from e
        finally:
            tmp.unlink(missing_ok=True)
    return out


def _config(ckpt: Checkpoint) -> dict[str, Any]:
    config = ckpt.json("config.json")
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        kind = config.get("model_type") if isinstance(config, dict) else None
        raise ConversionError(f"the checkpoint is a {kind!r} model, not BERT")
    if config.get("hidden_act", "gelu") != "gelu":
        raise ConversionError(f"the checkpoint's activation is {config['hidden_act']!r}; llama.cpp's BERT runs GELU")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError("the checkpoint's positions are not absolute; llama.cpp's BERT reads absolute ones")
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "max_position_embeddings", "vocab_size"):
        if not isinstance(config.get(key), int) or config[key] <= 0:
            raise ConversionError(f"config.json gives no positive whole {key}")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise ConversionError("config.json's hidden size is not a multiple of its head count")
    return config


def _pooling(ckpt: Checkpoint) -> gguf.PoolingType:
    if not ckpt.has("1_Pooling/config.json"):
        return gguf.PoolingType.CLS  # a plain BERT: its [CLS] row, as transformers' pooler reads it
    pooling = ckpt.json("1_Pooling/config.json")
    modes = [kind for flag, kind in _POOLING_MODES if isinstance(pooling, dict) and pooling.get(flag) is True]
    if len(modes) != 1:
        raise ConversionError("1_Pooling/config.json asks for no single pooling mode llama.cpp has "
                              "(mean, CLS or last token)")
    return modes[0]


def _write_metadata(
    w: gguf.GGUFWriter, c: dict[str, Any], name: str, license_name: str, pooling: gguf.PoolingType,
) -> None:
    w.add_name(name)
    if license_name:
        w.add_license(license_name)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_head_count(c["num_attention_heads"])
    eps = c.get("layer_norm_eps", 1e-12)
    if not isinstance(eps, (int, float)) or not eps >= 0:
        raise ConversionError("config.json's layer_norm_eps is not a number of 0 or more")
    w.add_layer_norm_eps(float(eps))
    w.add_causal_attention(False)
    w.add_pooling_type(pooling)


def _write_vocabulary(w: gguf.GGUFWriter, tokenizer: Any, c: dict[str, Any]) -> None:
    model = tokenizer.get("model") if isinstance(tokenizer, dict) else None
    if not isinstance(model, dict) or model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
        raise ConversionError("tokenizer.json holds no WordPiece vocabulary")
    normalizer = tokenizer.get("normalizer") or {}
    if isinstance(normalizer, dict) and normalizer.get("lowercase") is False:
        # llama_vocab's WordPiece session lowercases every input: a cased model would read wrong text
        raise ConversionError("the tokenizer is cased, and llama.cpp's WordPiece tokenizer lowercases every input")
    vocab: dict[str, int] = model["vocab"]
    n = len(vocab)
    if sorted(vocab.values()) != list(range(n)) or not all(isinstance(t, str) for t in vocab):
        raise ConversionError("tokenizer.json's vocabulary does not number its tokens 0 to n-1")
    if n > c["vocab_size"]:
        raise ConversionError(f"tokenizer.json has {n} tokens for a {c['vocab_size']}-row embedding table")
    by_id = [""] * n
    for token, i in vocab.items():
        by_id[i] = token
    special = {a["content"] for a in tokenizer.get("added_tokens") or [] if isinstance(a, dict) and a.get("special")}
    types = [gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in by_id]
    spelled = [t if t in special else t[2:] if t.startswith("##") else PHANTOM_SPACE + t for t in by_id]
    if len(set(spelled)) != n:
        raise ConversionError("the vocabulary spells two tokens alike in llama.cpp's form")
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(spelled)
    w.add_token_types(types)
    w.add_token_type_count(int(c.get("type_vocab_size", 1)))
    ids = {token: i for i, token in enumerate(by_id)}
    for token, add in (("[CLS]", w.add_bos_token_id), ("[SEP]", w.add_sep_token_id), ("[UNK]", w.add_unk_token_id),
                       ("[PAD]", w.add_pad_token_id), ("[MASK]", w.add_mask_token_id)):
        if token not in ids:
            raise ConversionError(f"the vocabulary has no {token} token")
        add(ids[token])
    # the framing sentence-transformers gives one text: [CLS] text [SEP]
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_sep_token(True)


def _write_tensors(
    w: gguf.GGUFWriter, tensors: dict[str, np.ndarray], c: dict[str, Any], rank_head: RankHead | None,
) -> None:
    n_embd, n_layer = c["hidden_size"], c["num_hidden_layers"]
    shapes = _expected_shapes(c)
    written: set[str] = set()
    for raw, array in tensors.items():
        gguf_name = _gguf_name(raw, n_layer)
        if gguf_name is None:
            continue
        if gguf_name.startswith("cls.") and rank_head is None:
            continue  # an embedding model pools itself; BERT's pooler is for the classifier
        want = shapes(gguf_name)
        if want is not None and tuple(array.shape) != want:
            raise ConversionError(f"{raw} is {tuple(array.shape)}, where config.json implies {want}")
        _add(w, gguf_name, array)
        written.add(gguf_name)
    if rank_head is not None:
        if rank_head.weight.ndim != 2 or rank_head.weight.shape[1] != n_embd or rank_head.bias.shape != (
                rank_head.weight.shape[0],):
            raise ConversionError(f"the rank head is not (labels, {n_embd}) with one bias per label")
        _add(w, "cls.output.weight", rank_head.weight)
        _add(w, "cls.output.bias", rank_head.bias)
        written |= {"cls.output.weight", "cls.output.bias"}
    needed = {"token_embd.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"}
    needed |= {f"blk.{i}.{t}.{p}" for i in range(n_layer) for t in _LAYER_NAMES.values() for p in ("weight", "bias")}
    missing = sorted(needed - written)
    if missing:
        raise ConversionError(f"the checkpoint lacks {len(missing)} of BERT's tensors ({missing[0]} first)")


def _gguf_name(raw: str, n_layer: int) -> str | None:
    """llama.cpp's name for a checkpoint tensor; None for one that is not used; a ConversionError for
    one the converter does not know."""
    name = raw.removeprefix("bert.")
    name = re.sub(r"\.gamma$", ".weight", re.sub(r"\.beta$", ".bias", name))
    if name.startswith(("cls.predictions", "cls.seq_relationship")):
        return None  # the pre-training heads
    stem, _, part = name.rpartition(".")
    if part not in ("weight", "bias"):
        raise ConversionError(f"the checkpoint holds a tensor the converter does not know: {raw[:80]}")
    if stem in _TOP_NAMES:
        return f"{_TOP_NAMES[stem]}.{part}"
    m = _LAYER.fullmatch(stem)
    if m and int(m.group(1)) < n_layer and m.group(2) in _LAYER_NAMES:
        return f"blk.{int(m.group(1))}.{_LAYER_NAMES[m.group(2)]}.{part}"
    raise ConversionError(f"the checkpoint holds a tensor the converter does not know: {raw[:80]}")


def _expected_shapes(c: dict[str, Any]) -> Callable[[str], tuple[int, ...] | None]:
    e, f = c["hidden_size"], c["intermediate_size"]
    top = {"token_embd.weight": (c["vocab_size"], e), "position_embd.weight": (c["max_position_embeddings"], e),
           "token_types.weight": (int(c.get("type_vocab_size", 1)), e), "cls.weight": (e, e)}
    layer = {"attn_q": (e, e), "attn_k": (e, e), "attn_v": (e, e), "attn_output": (e, e), "ffn_up": (f, e),
             "ffn_down": (e, f)}

    def shape(name: str) -> tuple[int, ...] | None:
        if name in top:
            return top[name]
        stem, _, part = name.rpartition(".")
        kind = stem.split(".")[-1]
        if part == "bias" or kind.endswith("norm"):
            rows = f if kind == "ffn_up" and part == "bias" else e
            return (rows,)
        return layer.get(kind)

    return shape


def _add(w: gguf.GGUFWriter, name: str, array: np.ndarray) -> None:
    keep_f32 = array.ndim < 2 or name.startswith(_KEEP_F32)
    w.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32 if keep_f32 else np.float16))
