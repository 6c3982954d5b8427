"""Write a tiny random-weight vision model: a llama text model and a LLaVA-style projector.

`python -m prefill.bench.tiny_vision OUT_DIR` writes `model.gguf` and `mmproj.gguf`. llama.cpp's
clip code loads the projector as a CLIP ViT with an MLP projector ("mlp", LLaVA 1.5's), at 56 px
with 14 px patches: 16 image tokens, each a vector as wide as the text model's embeddings (the
two must match, or mtmd refuses the pair). Its answers are noise; the tests and benchmarks use it
to check the path images take (tokens counted, the KV cache reused across turns), not what the
model says about them.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFValueType, GGUFWriter

from prefill.bench.tiny_model import CHATML, write_tiny_llama


@dataclass(frozen=True)
class VisionShape:
    """The projector's sizes (small: an image costs a few ms to encode on a CPU)."""

    image_size: int = 56  # pixels a side; mtmd scales every image to this
    patch_size: int = 14  # (56 / 14)^2 = 16 patches, 16 image tokens
    n_embd: int = 32  # the ViT's width
    n_head: int = 4
    n_ff: int = 64
    n_layer: int = 2
    n_hidden: int = 64  # the projector's hidden layer

    @property
    def n_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


TEXT_EMBD = 64  # the text model's width: the projector's output
# Calm activations (the llama writer's default 0.5 amplifies f16 rounding until a cached prefix and a
# fresh one disagree on the next token); still large enough that an image changes the answer.
WEIGHT_SCALE = 0.1


def write_mmproj(path: str | Path, shape: VisionShape = VisionShape(), text_embd: int = TEXT_EMBD,
                 seed: int = 1) -> Path:
    """A CLIP vision encoder with LLaVA's two-layer MLP projector, random weights."""
    path = Path(path)
    rng = np.random.default_rng(seed)
    w = GGUFWriter(str(path), "clip")
    w.add_name("prefill-tiny-vision-projector")
    w.add_file_type(1)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_text_encoder", False)
    w.add_bool("clip.use_gelu", True)
    w.add_string("clip.projector_type", "mlp")
    w.add_uint32("clip.vision.image_size", shape.image_size)
    w.add_uint32("clip.vision.patch_size", shape.patch_size)
    w.add_uint32("clip.vision.embedding_length", shape.n_embd)
    w.add_uint32("clip.vision.feed_forward_length", shape.n_ff)
    w.add_uint32("clip.vision.projection_dim", text_embd)
    w.add_uint32("clip.vision.attention.head_count", shape.n_head)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_uint32("clip.vision.block_count", shape.n_layer)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_key_value("clip.vision.feature_layer", [shape.n_layer], GGUFValueType.ARRAY, GGUFValueType.INT32)

    def t(name: str, *dims: int, f32: bool = False, scale: float = 0.1) -> None:
        a = rng.standard_normal(dims, dtype=np.float32) * scale
        w.add_tensor(name, a if f32 else a.astype(np.float16))

    def ones(name: str, n: int) -> None:
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    e = shape.n_embd
    t("v.patch_embd.weight", e, 3, shape.patch_size, shape.patch_size)  # numpy order: out, in, kh, kw
    t("v.patch_embd.bias", e, f32=True)
    t("v.class_embd", e, f32=True)
    t("v.position_embd.weight", shape.n_patches + 1, e)
    ones("v.pre_ln.weight", e)
    t("v.pre_ln.bias", e, f32=True)
    for i in range(shape.n_layer):
        b = f"v.blk.{i}."
        for part in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t(b + part + ".weight", e, e)
            t(b + part + ".bias", e, f32=True)
        ones(b + "ln1.weight", e)
        t(b + "ln1.bias", e, f32=True)
        ones(b + "ln2.weight", e)
        t(b + "ln2.bias", e, f32=True)
        t(b + "ffn_up.weight", shape.n_ff, e)
        t(b + "ffn_up.bias", shape.n_ff, f32=True)
        t(b + "ffn_down.weight", e, shape.n_ff)
        t(b + "ffn_down.bias", e, f32=True)
    t("mm.0.weight", shape.n_hidden, e)
    t("mm.0.bias", shape.n_hidden, f32=True)
    t("mm.2.weight", text_embd, shape.n_hidden)
    t("mm.2.bias", text_embd, f32=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_tiny_vision(out_dir: str | Path, shape: VisionShape = VisionShape(), n_vocab: int = 4096,
                      chat_template: str | None = CHATML) -> tuple[Path, Path]:
    """`model.gguf` (a llama text model `TEXT_EMBD` wide) and `mmproj.gguf` in `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = write_tiny_llama(out / "model.gguf", n_embd=TEXT_EMBD, n_vocab=n_vocab, context_length=4096,
                             chat_template=chat_template, name="prefill-tiny-vision", weight_scale=WEIGHT_SCALE)
    return model, write_mmproj(out / "mmproj.gguf", shape)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m prefill.bench.tiny_vision",
                                     description="Write a tiny random-weight vision model and its projector.")
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    model, mmproj = write_tiny_vision(args.out_dir)
    print(model)
    print(mmproj)
    return 0


if __name__ == "__main__":
    sys.exit(main())
