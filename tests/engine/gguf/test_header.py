"""The header check runs before llama.cpp sees a file; bad files raise ModelLoadError."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from prefill.engine.errors import ModelLoadError
from prefill.engine.gguf.header import GGUFTruncated, parse_header, read_header
from prefill.engine.llama.kv_sizes import kv_bytes_per_cell
from prefill.engine.local.chat_engine import ChatEngine


def test_reads_smollm2_shape(smollm2: Path) -> None:
    h = read_header(smollm2)
    assert (h.architecture, h.n_layer, h.n_embd, h.n_head, h.n_head_kv) == ("llama", 30, 576, 9, 3)
    assert h.context_length == 8192 and h.quantization == "Q4_1"
    assert h.chat_template and "im_start" in h.chat_template
    assert h.data_end == smollm2.stat().st_size
    # 30 layers * 3 KV heads * (64 + 64) dims * 2 bytes (f16)
    assert kv_bytes_per_cell(h) == 30 * 3 * 128 * 2
    assert kv_bytes_per_cell(h, "q8_0", "q8_0") == 30 * 3 * 128 * 34 // 32


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "empty"),
        (os.urandom(4096), "not a GGUF"),
        (b"GGUF\x07\x00\x00\x00" + b"\x00" * 16, "version"),
        (b"GGU", "too short"),
    ],
)
def test_bad_files_raise_model_load_error(tmp_path: Path, content: bytes, words: str) -> None:
    p = tmp_path / "bad.gguf"
    p.write_bytes(content)
    with pytest.raises(ModelLoadError, match=words):
        ChatEngine.load(p)


def test_truncated_file_is_refused_before_llama_cpp(tmp_path: Path, tiny_model: Path) -> None:
    p = tmp_path / "cut.gguf"
    data = tiny_model.read_bytes()
    p.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(ModelLoadError, match="truncated"):
        ChatEngine.load(p)
    p.write_bytes(data[:1000])  # cut inside the header itself
    with pytest.raises(ModelLoadError, match="truncated"):
        ChatEngine.load(p)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no such file"):
        ChatEngine.load(tmp_path / "nope.gguf")
    with pytest.raises(ModelLoadError, match="folder"):
        ChatEngine.load(tmp_path)


def test_prefix_parse_asks_for_more_bytes(smollm2: Path) -> None:
    with open(smollm2, "rb") as f:
        head = f.read(4 << 20)
    h = parse_header(head)
    assert h.n_layer == 30 and len(h.tensors) == 272
    with pytest.raises(GGUFTruncated):
        parse_header(head[:100_000])


def test_corrupt_tensor_offset_is_caught(tmp_path: Path, tiny_model: Path) -> None:
    """A header whose tensor table points past the end of the file."""
    p = tmp_path / "bloated.gguf"
    shutil.copy(tiny_model, p)
    h = read_header(p)
    with open(p, "r+b") as f:  # shrink the file by one byte: the last tensor no longer fits
        f.truncate(h.data_end - 1)
    with pytest.raises(ModelLoadError, match="1 missing"):
        read_header(p)
