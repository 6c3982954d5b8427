"""A Hugging Face checkpoint's files, read from a folder or a zip, and its safetensors weights.

The converter reads a checkpoint only through `Checkpoint`, so the bundled package's zip and an
unpacked folder are one case. Each file is bounded before it is read and every tensor's place is
checked against the file, so a malformed checkpoint is a `ConversionError`, never a crash.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from prefill.engine.embed.errors import ConversionError

MAX_JSON_BYTES = 32 * 2**20  # tokenizer.json of a 250k vocabulary is about 17 MB
MAX_WEIGHTS_BYTES = 4 * 2**30  # an encoder-sized checkpoint; far past what the converter is for
MAX_SAFETENSORS_HEADER = 64 * 2**20
# safetensors dtypes the converter reads, and how numpy reads them (BF16 is widened on read)
_DTYPES: dict[str, np.dtype[Any]] = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2")}


class Checkpoint:
    """The files of one checkpoint, by their names inside it (`config.json`, `1_Pooling/config.json`)."""

    def __init__(self, path: Path):
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        try:
            if path.is_file():
                self._zip = zipfile.ZipFile(path)
            elif not path.is_dir():
                raise ConversionError(f"the checkpoint {path} is neither a folder nor a zip file")
        except (OSError, zipfile.BadZipFile) as e:
            raise ConversionError(f"cannot open the checkpoint {path.name}: {e}") from e
        if self._zip is not None:
            # one folder at the top of the zip (model/config.json) counts as its root
            names = self._zip.namelist()
            self._prefix = "" if "config.json" in names else _single_root(names)
        else:
            self._prefix = ""

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def has(self, name: str) -> bool:
        if self._zip is not None:
            return self._prefix + name in self._zip.namelist()
        return (self.path / name).is_file()

    def read(self, name: str, limit: int) -> bytes:
        """The file's bytes; a `ConversionError` when it is missing or larger than `limit`."""
        try:
            if self._zip is not None:
                info = self._zip.getinfo(self._prefix + name)
                size = info.file_size
                if size > limit:
                    raise ConversionError(f"{name} in {self.path.name} is {size} bytes, more than {limit}")
                with self._zip.open(info) as f:
                    data = f.read(limit + 1)
            else:
                with open(self.path / name, "rb") as f:
                    data = f.read(limit + 1)
        except KeyError:
            raise ConversionError(f"the checkpoint {self.path.name} has no {name}") from None
        except FileNotFoundError:
            raise ConversionError(f"the checkpoint {self.path.name} has no {name}") from None
        except (OSError, zipfile.BadZipFile, EOFError) as e:  # a damaged member: a CRC or a zlib fault
            raise ConversionError(f"cannot read {name} from {self.path.name}: {e}") from e
        if len(data) > limit:
            raise ConversionError(f"{name} in {self.path.name} is more than {limit} bytes")
        return data

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name, MAX_JSON_BYTES))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ConversionError(f"{name} in {self.path.name} is not JSON: {e}") from e

    def tensors(self, name: str = "model.safetensors") -> dict[str, np.ndarray]:
        return read_safetensors(self.read(name, MAX_WEIGHTS_BYTES), name)


def _single_root(names: list[str]) -> str:
    roots = {n.split("/", 1)[0] for n in names if "/" in n}
    if len(roots) == 1:
        root = roots.pop() + "/"
        if root + "config.json" in names:
            return root
    return ""


def read_safetensors(data: bytes, name: str = "model.safetensors") -> dict[str, np.ndarray]:
    """Every floating-point tensor of a safetensors file, as float32 or float16 arrays that view `data`
    (BF16 widened to float32). Integer tensors (BERT's `position_ids`) are left out.

    Raises:
        ConversionError: the header is malformed or a tensor lies outside the file.
    """
    if len(data) < 8:
        raise ConversionError(f"{name} is too short to be a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    if n > min(MAX_SAFETENSORS_HEADER, len(data) - 8):
        raise ConversionError(f"{name} gives a {n}-byte header, which the file cannot hold")
    try:
        header = json.loads(data[8 : 8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConversionError(f"{name}'s header is not JSON: {e}") from e
    if not isinstance(header, dict):
        raise ConversionError(f"{name}'s header is not a table of tensors")
    body = memoryview(data)[8 + n :]
    out: dict[str, np.ndarray] = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        try:
            dtype_name, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
            shape = tuple(int(d) for d in shape)
            begin, end = int(begin), int(end)
        except (KeyError, TypeError, ValueError):
            raise ConversionError(f"{name}: the entry for {key[:80]!r} is malformed") from None
        if dtype_name not in _DTYPES:
            if dtype_name.startswith(("I", "U", "BOOL")):
                continue
            raise ConversionError(f"{name}: {key[:80]} is of type {dtype_name[:20]}, which the converter does not read")
        dtype = _DTYPES[dtype_name]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if any(d < 0 for d in shape) or not 0 <= begin <= end <= len(body) or end - begin != count * dtype.itemsize:
            raise ConversionError(f"{name}: {key[:80]} does not fit where its header places it")
        array = np.frombuffer(body[begin:end], dtype=dtype).reshape(shape)
        if dtype_name == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        out[key] = array
    return out
