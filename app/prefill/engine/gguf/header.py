"""Read and check a GGUF file's header without llama.cpp.

llama.cpp aborts or crashes on some malformed files, so Prefill reads the header
itself first: magic, version, metadata, tensor table, that every tensor's data
lies inside the file, and that the numbers describing the model's shape are whole
numbers (a `block_count` that is an array or a float is a `GGUFError`, never a
`TypeError` further on). The same reader serves the model library and the fit
estimate, and works on a prefix of a remote file (it raises `GGUFTruncated` when
it needs more bytes than it was given). What llama.cpp itself would abort on is
checked before a load by `gguf_guard`.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, LlamaFileType

from prefill.engine.errors import ModelLoadError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
MAX_STRING = 64 * 1024 * 1024  # a chat template or a name, never this long
MAX_KEPT_STRINGS = 64  # string arrays longer than this (vocabularies, merges) are counted, not kept
MAX_KEPT_NUMBERS = 512  # per-layer numbers (llama.cpp's most layers) are kept; scores are not
MAX_LAYERS = 512  # LLAMA_MAX_LAYERS: llama.cpp asserts on more
TOKENS_KEY = "tokenizer.ggml.tokens"
TOKEN_TYPES_KEY = "tokenizer.ggml.token_type"
DEFAULT_ALIGNMENT = 32

Scalar = int | float | bool | str
Value = Scalar | list[Any]
Buffer = bytes | bytearray | memoryview | mmap.mmap

# GGUF value type -> struct format of a fixed-size scalar
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GGUFError(ModelLoadError):
    """The file is not a readable GGUF model."""


class GGUFTruncated(GGUFError):
    """The header runs past the bytes available (a truncated file, or a too-short prefix)."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int  # from the start of the data section
    nbytes: int

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass
class GGUFHeader:
    """What a GGUF file's header says: metadata, tensors, and where its data lies."""

    version: int
    metadata: dict[str, Value]
    array_lengths: dict[str, int]
    tensors: list[TensorInfo]
    data_offset: int
    file_size: int | None = None
    tokens: list[bytes] | None = None  # the vocabulary as stored, when asked for (`keep_tokens`)
    token_types: tuple[int, ...] | None = None  # and each token's type, when stored as integers
    types: dict[str, int] = field(default_factory=dict)  # each key's GGUF value type

    # --- model shape -------------------------------------------------------------
    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", "unknown"))

    def arch_value(self, key: str, default: Value | None = None) -> Value | None:
        return self.metadata.get(f"{self.architecture}.{key}", default)

    @property
    def n_layer(self) -> int:
        return as_int(self.arch_value("block_count", 0))

    @property
    def n_embd(self) -> int:
        return as_int(self.arch_value("embedding_length", 0))

    @property
    def n_head(self) -> int:
        return _first_int(self.arch_value("attention.head_count", 0))

    @property
    def n_head_kv(self) -> int:
        return _first_int(self.arch_value("attention.head_count_kv", self.n_head)) or self.n_head

    @property
    def head_dim_k(self) -> int:
        default = self.n_embd // self.n_head if self.n_head else 0
        return as_int(self.arch_value("attention.key_length", default)) or default

    @property
    def head_dim_v(self) -> int:
        default = self.n_embd // self.n_head if self.n_head else 0
        return as_int(self.arch_value("attention.value_length", default)) or default

    @property
    def context_length(self) -> int:
        return as_int(self.arch_value("context_length", 0))

    @property
    def chat_template(self) -> str | None:
        t = self.metadata.get("tokenizer.chat_template")
        return t if isinstance(t, str) else None

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name", ""))

    @property
    def n_params(self) -> int:
        return sum(t.n_elements for t in self.tensors)

    @property
    def quantization(self) -> str:
        ft = self.metadata.get("general.file_type")
        if isinstance(ft, int):
            try:
                return LlamaFileType(ft).name.removeprefix("MOSTLY_").replace("ALL_", "")
            except ValueError:
                pass
        return "unknown"

    @property
    def data_end(self) -> int:
        """Bytes the file must hold for every tensor to be inside it."""
        ends = [self.data_offset + t.offset + t.nbytes for t in self.tensors]
        return max(ends, default=self.data_offset)


def as_int(v: Value | None) -> int:
    """A number the header check has already found whole (0 for anything else)."""
    return int(v) if isinstance(v, (int, float)) else 0


def _first_int(v: Value | None) -> int:
    if isinstance(v, list):  # some models give per-layer head counts
        return int(max(v)) if v else 0
    return int(v or 0)


class _Reader:
    """Reads little-endian GGUF values from a buffer (bytes or an mmap) with bounds checks."""

    def __init__(self, buf: Buffer, limit: int, keep_tokens: bool = False):
        self.buf = buf
        self.limit = limit
        self.pos = 0
        self.keep_tokens = keep_tokens
        self.tokens: list[bytes] | None = None
        self.token_types: tuple[int, ...] | None = None

    def _need(self, n: int) -> None:
        if n < 0:
            raise GGUFError("GGUF header is corrupt (negative length)")
        if self.pos + n > self.limit:
            raise GGUFTruncated("the file ends inside its GGUF header (truncated download?)")

    def read(self, n: int) -> bytes:
        self._need(n)
        b = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return b

    def skip(self, n: int) -> None:
        self._need(n)
        self.pos += n

    def unpack(self, fmt: str) -> Any:  # a struct value: int, float or bool by `fmt`
        n = struct.calcsize(fmt)
        self._need(n)
        v = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += n
        return v

    def raw_string(self) -> bytes:
        n = self.unpack("<Q")
        if n > MAX_STRING:
            raise GGUFError(f"GGUF header is corrupt (a string of {n} bytes)")
        return self.read(n)

    def string(self) -> str:
        return self.raw_string().decode("utf-8", errors="replace")

    def value(self, vtype: int, key: str, lengths: dict[str, int]) -> Value | None:
        if vtype in _SCALARS:
            scalar: Scalar = self.unpack(_SCALARS[vtype])
            return scalar
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            itype = self.unpack("<I")
            count = self.unpack("<Q")
            lengths[key] = count
            if itype in _SCALARS:
                size = struct.calcsize(_SCALARS[itype])
                if key == TOKEN_TYPES_KEY and self.keep_tokens and itype not in (6, 12):  # integers
                    self._need(count * size)
                    self.token_types = struct.unpack_from(f"<{count}{_SCALARS[itype][1]}", self.buf, self.pos)
                    self.pos += count * size
                    return None
                if count > MAX_KEPT_NUMBERS:
                    self.skip(count * size)
                    return None
                return [self.unpack(_SCALARS[itype]) for _ in range(count)]
            if itype == _STRING:
                if key == TOKENS_KEY and self.keep_tokens:
                    self.tokens = self._raw_strings(count)
                    return None
                if count <= MAX_KEPT_STRINGS:
                    return [self.string() for _ in range(count)]
                self._skip_strings(count)
                return None
            raise GGUFError(f"GGUF header is corrupt (array of unknown type {itype} in {key!r})")
        raise GGUFError(f"GGUF header is corrupt (unknown value type {vtype} for {key!r})")

    def _raw_strings(self, count: int) -> list[bytes]:
        # The vocabulary, as stored: one unpack_from and one slice per token (~10^5 of them).
        buf, pos, limit, unpack_from = self.buf, self.pos, self.limit, struct.unpack_from
        out: list[bytes] = []
        append = out.append
        for _ in range(count):
            if pos + 8 > limit:
                raise GGUFTruncated("the file ends inside its GGUF header (truncated download?)")
            n = unpack_from("<Q", buf, pos)[0]
            if n > MAX_STRING:
                raise GGUFError("GGUF header is corrupt (an overlong string in an array)")
            pos += 8
            if pos + n > limit:
                raise GGUFTruncated("the file ends inside its GGUF header (truncated download?)")
            chunk = buf[pos : pos + n]  # bytes from an mmap or bytes, a copy to take from a bytearray
            append(chunk if isinstance(chunk, bytes) else bytes(chunk))
            pos += n
        self.pos = pos
        return out

    def _skip_strings(self, count: int) -> None:
        # A vocabulary holds ~10^5 strings: skip them with one unpack_from each, no copies.
        buf, pos, limit, unpack_from = self.buf, self.pos, self.limit, struct.unpack_from
        for _ in range(count):
            if pos + 8 > limit:
                raise GGUFTruncated("the file ends inside its GGUF header (truncated download?)")
            n = unpack_from("<Q", buf, pos)[0]
            if n > MAX_STRING:
                raise GGUFError("GGUF header is corrupt (an overlong string in an array)")
            pos += 8 + n
        if pos > limit:
            raise GGUFTruncated("the file ends inside its GGUF header (truncated download?)")
        self.pos = pos


def tensor_nbytes(ggml_type: int, shape: tuple[int, ...]) -> int:
    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
    except (ValueError, KeyError) as e:
        raise GGUFError(f"unknown tensor type {ggml_type}: the model needs a newer llama.cpp") from e
    n = 1
    for d in shape:
        n *= d
    if n % block:
        raise GGUFError("GGUF header is corrupt (tensor size not a whole number of blocks)")
    return n // block * size


def parse_header(buf: Buffer, keep_tokens: bool = False) -> GGUFHeader:
    """Parse a GGUF header from the start of `buf`: a whole file (mmap) or a prefix of one.

    Args:
        keep_tokens: also keep the vocabulary's strings, as stored (`GGUFHeader.tokens`).
    """
    size = len(buf)
    if size == 0:
        raise GGUFError("the file is empty")
    r = _Reader(buf, size, keep_tokens)
    try:
        magic = r.read(4)
    except GGUFTruncated as e:
        raise GGUFError("the file is too short to be a GGUF model") from e
    if magic != GGUF_MAGIC:
        raise GGUFError("not a GGUF file (wrong magic bytes)")
    version = r.unpack("<I")
    if version not in SUPPORTED_VERSIONS:
        raise GGUFError(f"unsupported GGUF version {version}")
    n_tensors = r.unpack("<Q")
    n_kv = r.unpack("<Q")
    if n_tensors > 1_000_000 or n_kv > 1_000_000:
        raise GGUFError("GGUF header is corrupt (impossible tensor or key count)")
    metadata: dict[str, Value] = {}
    lengths: dict[str, int] = {}
    types: dict[str, int] = {}
    for _ in range(n_kv):
        key = r.string()
        vtype = types[key] = r.unpack("<I")
        v = r.value(vtype, key, lengths)
        if v is not None:
            metadata[key] = v
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.unpack("<I")
        if n_dims > 8:
            raise GGUFError(f"GGUF header is corrupt (tensor {name!r} has {n_dims} dimensions)")
        shape = tuple(r.unpack("<Q") for _ in range(n_dims))
        ggml_type = r.unpack("<I")
        offset = r.unpack("<Q")
        tensors.append(TensorInfo(name, shape, ggml_type, offset, tensor_nbytes(ggml_type, shape)))
    align = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not _is_count(align) or align <= 0 or align & (align - 1):
        raise GGUFError("GGUF header is corrupt (bad alignment)")
    _check_shape_types(metadata, lengths)
    pos = r.pos
    data_offset = (pos + align - 1) // align * align
    return GGUFHeader(
        version, metadata, lengths, tensors, data_offset, tokens=r.tokens, token_types=r.token_types, types=types
    )


# The numbers Prefill reads from a header (shape, fit, KV size): whole numbers, or per layer a list of them.
_COUNT_KEYS = ("block_count", "context_length", "embedding_length", "vocab_size",
               "attention.key_length", "attention.value_length")
_PER_LAYER_KEYS = ("attention.head_count", "attention.head_count_kv", "feed_forward_length")


def _is_count(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _describe(v: object) -> str:
    if isinstance(v, bool):
        return f"a true/false value ({v})"
    if isinstance(v, float):
        return f"a floating-point number ({v!r})"
    if isinstance(v, int):
        return f"a negative number ({v})"
    if isinstance(v, str):
        return f"a string ({v[:40]!r})"
    return "an array"


def _malformed(key: str, v: object, what: str = "a whole number") -> GGUFError:
    return GGUFError(f"the model's metadata is malformed: {key} is {_describe(v)}, where {what} belongs")


def _check_shape_types(metadata: dict[str, Value], lengths: dict[str, int]) -> None:
    """Every shape number is a whole number, so no reader of the header meets a TypeError."""
    arch = metadata.get("general.architecture", "unknown")
    if not isinstance(arch, str):
        raise _malformed("general.architecture", arch, "a name")
    for name in _COUNT_KEYS:
        key = f"{arch}.{name}"
        v = metadata.get(key)
        if key in lengths:
            raise _malformed(key, [])
        if v is not None and not _is_count(v):
            raise _malformed(key, v)
    for name in _PER_LAYER_KEYS:
        key = f"{arch}.{name}"
        v = metadata.get(key)
        for item in v if isinstance(v, list) else [v]:
            if item is not None and not _is_count(item):
                raise _malformed(key, item, "a whole number (or one per layer)")
    n_layer = metadata.get(f"{arch}.block_count", 0)
    if isinstance(n_layer, int) and n_layer > MAX_LAYERS:
        raise GGUFError(f"the model says it has {n_layer} layers; llama.cpp supports at most {MAX_LAYERS}")


def read_header(path: str | Path, keep_tokens: bool = False) -> GGUFHeader:
    """Read a local file's header and check that all its tensor data is inside it.

    Raises:
        GGUFError: the file is missing, empty, truncated, unreadable, or not GGUF.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if size == 0:
            raise GGUFError("the file is empty")
        with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            header = parse_header(m, keep_tokens)
    except FileNotFoundError as e:
        raise GGUFError(f"no such file: {p}") from e
    except IsADirectoryError as e:
        raise GGUFError(f"{p} is a folder, not a model file") from e
    except PermissionError as e:
        raise GGUFError(f"cannot read {p}: permission denied") from e
    except (OSError, ValueError) as e:  # a file that shrank under us, a device, a FIFO…
        raise GGUFError(f"cannot read {p}: {e}") from e
    header.file_size = size
    if header.data_end > size:
        missing = header.data_end - size
        raise GGUFTruncated(
            f"the file is truncated: its tensors need {header.data_end:,} bytes, "
            f"it has {size:,} ({missing:,} missing)"
        )
    return header


def split_paths(path: str | Path, header: GGUFHeader) -> list[Path]:
    """Every part of a split model whose first part is ``path`` (its header says how many);
    ``[path]`` for a single file or for a part other than the first."""
    first = Path(path)
    n = header.metadata.get("split.count")
    suffix = f"-00001-of-{n:05d}.gguf" if isinstance(n, int) else ""
    if not isinstance(n, int) or n < 2 or not first.name.endswith(suffix):
        return [first]
    prefix = first.name[: -len(suffix)]
    return [first.with_name(f"{prefix}-{i:05d}-of-{n:05d}.gguf") for i in range(1, n + 1)]
