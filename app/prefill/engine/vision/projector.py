"""A vision projector (an mmproj GGUF) beside a loaded text model, through llama.cpp's mtmd.

An image becomes tokens in two steps: mtmd tokenizes it (the model's own wrapping text around an
image chunk of `n_tokens` embeddings), then, when the prompt is evaluated, the chunk is encoded
(the vision tower: `encode_ms`) and its embeddings decoded into the KV cache at their positions.

The chat engine keys its KV cache by a list of token ids. An image stands in that list as a run of
`n_pos` pseudo-tokens (ids from `IMAGE_TOKEN_BASE` up, past any vocabulary) derived from its digest:
the same image gives the same run in every turn and every saved state, so the longest-prefix match
and the disk cache treat it as they treat text, and a turn after an image evaluates only new text.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import llama_cpp
from llama_cpp import mtmd_cpp as mtmd

from prefill.engine.errors import EngineError
from prefill.engine.gguf.header import GGUFError, read_header
from prefill.engine.gguf.projector_files import find_projector as find_projector  # shared with the hub
from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.message import ImagePart
from prefill.engine.vision.errors import ProjectorError
from prefill.engine.vision.image_door import rgb_pixels

IMAGE_TOKEN_BASE = 1 << 30  # pseudo-token ids start here (a saved state allows ids below 2**31)
_RUN_SPACE = 1 << 29  # where in [BASE, BASE + space) a run starts, from the digest
_KEEP_IMAGES = 64  # tokenized images kept (their chunks hold the preprocessed pixels)
EMBEDDINGS_BYTES = 128 * 1024 * 1024  # encoded images kept: one shown again is not encoded again


def is_image_token(token: int) -> bool:
    return token >= IMAGE_TOKEN_BASE


@dataclass(eq=False)
class ImageTokens:
    """One image as the prompt holds it: the wrapping text tokens before and after (the model's
    own image markers, often none) around the run of pseudo-tokens that stands for its embeddings."""

    digest: str
    before: tuple[int, ...]
    run: tuple[int, ...]  # one per position the image takes (its n_pos)
    after: tuple[int, ...]
    n_tokens: int  # embeddings the image becomes (more than `run` on M-RoPE models)
    chunks: int = field(repr=False, default=0)  # mtmd_input_chunks*, owned
    chunk: int = field(repr=False, default=0)  # its image chunk

    @property
    def tokens(self) -> tuple[int, ...]:
        return self.before + self.run + self.after


def pseudo_run(digest: str, n_pos: int) -> tuple[int, ...]:
    """The run of ids that stands for an image in the cache's token list."""
    start = int(digest[:12], 16) % _RUN_SPACE
    return tuple(IMAGE_TOKEN_BASE + start + i for i in range(n_pos))


def check_projector_file(path: Path) -> None:
    """The projector file's door: a whole GGUF of llama.cpp's clip architecture with a vision encoder
    and the fields clip.cpp asserts (aborts the process) on when they are missing.

    Raises:
        ProjectorError: what is wrong with the file, in words.
    """
    try:
        header = read_header(path)
    except GGUFError as e:
        raise ProjectorError(f"the projector {path.name} cannot be used: {e}") from None
    meta = header.metadata
    if header.architecture != "clip":
        raise ProjectorError(f"{path.name} is not a projector (mmproj) file: its architecture is "
                             f"{header.architecture!r}, not 'clip'")
    if meta.get("clip.has_vision_encoder") is not True:
        raise ProjectorError(f"{path.name} has no vision encoder: it cannot read images")
    for key in ("clip.vision.image_mean", "clip.vision.image_std"):
        v = meta.get(key)
        if not isinstance(v, list) or len(v) < 3 or not all(isinstance(x, float) for x in v[:3]):
            raise ProjectorError(f"{path.name} lacks {key} (three numbers): it is damaged or not a projector")
    if not isinstance(meta.get("clip.projector_type", ""), str):
        raise ProjectorError(f"{path.name}: clip.projector_type is not a name")


class _MtmdLog:
    """mtmd's log lines, kept while a projector loads (for the reason of a refusal), dropped otherwise."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.capturing = False
        self.callback = llama_cpp.llama_log_callback(self._on_log)
        mtmd.mtmd_log_set(self.callback, ctypes.c_void_p(0))
        mtmd.mtmd_helper_log_set(self.callback, ctypes.c_void_p(0))

    def _on_log(self, level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        if self.capturing:
            self.lines.append(text.decode("utf-8", errors="replace"))


_log_lock = threading.Lock()
_log: _MtmdLog | None = None


def _mtmd_log() -> _MtmdLog:
    global _log
    with _log_lock:
        if _log is None:
            _log = _MtmdLog()
        return _log


class Projector:
    """An mmproj loaded for one `LlamaRuntime`. Tokenizing an image is CPU work on its pixels (safe
    beside decoding); `evaluate` runs on the runtime's owner thread."""

    def __init__(self, path: str | Path, runtime: LlamaRuntime):
        self.path = Path(path)
        check_projector_file(self.path)
        self.runtime = runtime
        log = _mtmd_log()
        params = mtmd.mtmd_context_params_default()
        params.use_gpu = runtime.offload.gpu_layers > 0
        params.n_threads = runtime.settings.prefill_threads
        params.print_timings = False
        params.flash_attn_type = 1 if runtime.flash_attn_on else 0  # as the model's context resolved it
        with _log_lock:
            log.lines, log.capturing = [], True
            try:
                ctx = mtmd.mtmd_init_from_file(str(self.path).encode(), runtime.model, params)
            finally:
                log.capturing = False
        if not ctx:
            raise ProjectorError(f"llama.cpp could not load the projector {self.path.name}: {_reason(log.lines)}")
        self.ctx = ctx
        if not mtmd.mtmd_support_vision(ctx):
            self.close()
            raise ProjectorError(f"{self.path.name} is a projector for audio, not images")
        self.marker = (mtmd.mtmd_default_marker() or b"<__media__>")
        self._images: OrderedDict[str, ImageTokens] = OrderedDict()
        self._by_first: dict[int, ImageTokens] = {}
        self._lock = threading.Lock()
        # An image's embeddings by digest, the most recent last, within EMBEDDINGS_BYTES: an image shown
        # again (a regenerated answer, another chat or slot, a cache that was not kept) skips the encoder.
        self._embeddings: OrderedDict[str, ctypes.Array[ctypes.c_float]] = OrderedDict()
        self._embeddings_bytes = 0
        self.n_embd = int(llama_cpp.llama_model_n_embd_inp(runtime.model))

    # --- images into tokens ----------------------------------------------------------------
    def image(self, part: ImagePart) -> ImageTokens:
        """The image's tokens, tokenized once per digest (kept for the last `_KEEP_IMAGES` images).

        Raises:
            EngineError: mtmd refused the image.
        """
        digest = part.digest
        with self._lock:
            found = self._images.get(digest)
            if found is not None:
                self._images.move_to_end(digest)
                return found
        made = self._tokenize(part)
        with self._lock:
            self._images[digest] = made
            self._by_first[made.run[0]] = made
            while len(self._images) > _KEEP_IMAGES:
                _d, old = self._images.popitem(last=False)
                if self._by_first.get(old.run[0]) is old:
                    del self._by_first[old.run[0]]
                mtmd.mtmd_input_chunks_free(old.chunks)
        return made

    def _tokenize(self, part: ImagePart) -> ImageTokens:
        width, height, rgb = rgb_pixels(part)
        data = (ctypes.c_uint8 * len(rgb)).from_buffer_copy(rgb)
        bitmap = mtmd.mtmd_bitmap_init(width, height, data)
        if not bitmap:
            raise EngineError("llama.cpp could not take the image's pixels")
        chunks = mtmd.mtmd_input_chunks_init()
        try:
            mtmd.mtmd_bitmap_set_id(bitmap, part.digest.encode())
            text = mtmd.mtmd_input_text()
            text.text, text.text_len = self.marker, len(self.marker)
            text.add_special, text.parse_special = False, True
            bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
            rc = mtmd.mtmd_tokenize(self.ctx, chunks, ctypes.byref(text), bitmaps, 1)
            if rc != 0:
                raise EngineError(f"llama.cpp could not tokenize the image (code {rc})")
            before: list[int] = []
            after: list[int] = []
            image_chunk, n_tokens, n_pos = 0, 0, 0
            for i in range(mtmd.mtmd_input_chunks_size(chunks)):
                chunk = mtmd.mtmd_input_chunks_get(chunks, i)
                kind = mtmd.mtmd_input_chunk_get_type(chunk)
                if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                    n = ctypes.c_size_t(0)
                    ptr = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                    if ptr:
                        (after if image_chunk else before).extend(ptr[j] for j in range(n.value))
                elif kind == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE and not image_chunk:
                    image_chunk = int(chunk or 0)
                    n_tokens = int(mtmd.mtmd_input_chunk_get_n_tokens(chunk))
                    n_pos = int(mtmd.mtmd_input_chunk_get_n_pos(chunk))
                else:
                    raise EngineError("llama.cpp made more of one image than one image chunk")
            if not image_chunk or n_pos <= 0:
                raise EngineError("llama.cpp made no image tokens of the image")
        except BaseException:
            mtmd.mtmd_input_chunks_free(chunks)
            raise
        finally:
            mtmd.mtmd_bitmap_free(bitmap)
        return ImageTokens(part.digest, tuple(before), pseudo_run(part.digest, n_pos), tuple(after), n_tokens,
                           int(chunks or 0), image_chunk)

    def n_tokens_of(self, first: int) -> int:
        """The embeddings of the image whose run starts with `first` (0: not known here)."""
        with self._lock:
            found = self._by_first.get(first)
        return found.n_tokens if found is not None else 0

    # --- evaluation (the runtime's owner thread) ------------------------------------------------
    def evaluate(self, first: int, n_past: int, seq: int = 0) -> float:
        """Encode the image whose run starts with `first` and decode its embeddings into sequence `seq`
        at position `n_past`; the encoder's milliseconds.

        Raises:
            EngineError: the image is not tokenized here, or llama.cpp failed to encode or decode it.
        """
        with self._lock:
            found = self._by_first.get(first)
        if found is None:
            raise EngineError("an image in the prompt was not prepared for the projector")
        chunk = ctypes.c_void_p(found.chunk)
        encode_ms = 0.0
        embd = self._embeddings.get(found.digest)
        if embd is None:
            t0 = time.perf_counter()
            rc = mtmd.mtmd_encode_chunk(self.ctx, chunk)
            encode_ms = (time.perf_counter() - t0) * 1000
            if rc != 0:
                raise EngineError(f"llama.cpp failed to encode the image (code {rc})")
            embd = self._keep_embeddings(found)
        else:
            self._embeddings.move_to_end(found.digest)
        new_past = llama_cpp.llama_pos(0)
        rc = mtmd.mtmd_helper_decode_image_chunk(
            self.ctx, self.runtime.ctx, chunk, embd, n_past, seq, self.runtime.n_batch, ctypes.byref(new_past),
            mtmd.mtmd_helper_post_decode_callback(), None,
        )
        if rc != 0:
            raise EngineError(f"llama.cpp failed to decode the image (code {rc}): the KV cache may be full")
        return encode_ms

    def _keep_embeddings(self, found: ImageTokens) -> ctypes.Array[ctypes.c_float]:
        """A copy of the encoder's output for `found` (mtmd overwrites its buffer with the next image),
        kept within EMBEDDINGS_BYTES, the least recently used dropped first."""
        n = found.n_tokens * self.n_embd
        out = (ctypes.c_float * n)()
        src = mtmd.mtmd_get_output_embd(self.ctx)
        if not src:
            raise EngineError("llama.cpp gave no embeddings for the image")
        ctypes.memmove(out, src, n * ctypes.sizeof(ctypes.c_float))
        size = ctypes.sizeof(out)
        if size <= EMBEDDINGS_BYTES:
            self._embeddings[found.digest] = out
            self._embeddings_bytes += size
            while self._embeddings_bytes > EMBEDDINGS_BYTES:
                _d, old = self._embeddings.popitem(last=False)
                self._embeddings_bytes -= ctypes.sizeof(old)
        return out

    def forget_embeddings(self) -> None:
        """Drop the kept encodings: every image is encoded again when next evaluated."""
        self._embeddings.clear()
        self._embeddings_bytes = 0

    def close(self) -> None:
        self.forget_embeddings()
        with self._lock:
            for img in self._images.values():
                mtmd.mtmd_input_chunks_free(img.chunks)
            self._images.clear()
            self._by_first.clear()
        if getattr(self, "ctx", None):
            mtmd.mtmd_free(self.ctx)
            self.ctx = None

    def __del__(self) -> None:
        if getattr(self, "ctx", None):
            self.close()


def _reason(lines: list[str]) -> str:
    text = [ln.strip() for ln in lines if ln.strip()]
    errors = [ln for ln in text if "error" in ln.lower() or "mismatch" in ln.lower() or "fail" in ln.lower()]
    return (errors or text or ["no reason given"])[-1]
