"""One llama.cpp context shared by several sequences, and the batch that feeds them.

`BatchRuntime` is a `LlamaRuntime` whose context holds `n_seq` sequences (one per
server slot), each with its own KV cells (`kv_unified` off: sequences that share
no prefix attend faster apart). `TokenBatch` is a `llama_batch` over arrays that
Python owns, filled by slice assignment so a step costs little in Python.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from prefill.engine.errors import EngineError, ModelLoadError
from prefill.engine.gguf.header import GGUFHeader, read_header
from prefill.engine.gguf.model_kind import check_chat_model
from prefill.engine.llama.kv_sizes import ggml_type_id, kv_bytes_per_cell
from prefill.engine.llama.offload import DeviceReport, device_report, resolve_gpu_layers
from prefill.engine.llama.runtime import (
    FLASH_ATTN_TYPES,
    LlamaRuntime,
    _init_backend,
    context_error,
    flash_attn_resolved,
    lead_of,
    top_prob_of,
)
from prefill.engine.settings import LoadSettings

MAX_SEQUENCES = 64  # llama.cpp's LLAMA_MAX_SEQ


def _gil_holding(name: str, argtypes: list[type], restype: type) -> Callable[..., Any]:
    """A function of libllama called without releasing the GIL (ctypes.PyDLL), for short calls
    made many times a step: each release lets another busy thread (the server's event loop) take
    the GIL, and getting it back can cost a whole switch interval, longer than the call."""
    lib = llama_cpp.llama_cpp._lib
    fn = getattr(ctypes.PyDLL(lib._name, handle=lib._handle), name)
    fn.argtypes, fn.restype = argtypes, restype
    return fn  # type: ignore[no-any-return]


_sample_holding_gil = _gil_holding("llama_sampler_sample", [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32],
                                   ctypes.c_int32)
_logits_holding_gil = _gil_holding("llama_get_logits_ith", [ctypes.c_void_p, ctypes.c_int32],
                                   ctypes.POINTER(ctypes.c_float))


class BatchRuntime(LlamaRuntime):
    """A loaded model whose context decodes `n_seq` sequences together.

    `settings.n_ctx` is the context of one sequence; the context holds n_seq of them.
    Not thread-safe: one owner thread (the scheduler) uses it.
    """

    def __init__(self, path: Path, settings: LoadSettings, n_seq: int, n_gpu_layers: int, n_layer: int):
        if not 1 <= n_seq <= MAX_SEQUENCES:
            raise ValueError(f"parallel sequences must be between 1 and {MAX_SEQUENCES}, not {n_seq}")
        # LlamaRuntime makes a one-sequence context; a minimal one, swapped for ours below.
        # (A `n_seq_max` argument on LlamaRuntime would make this swap unnecessary.)
        super().__init__(path, replace(settings, n_ctx=128, n_batch=128), n_gpu_layers, n_layer)
        llama_cpp.llama_free(self.ctx)
        self.ctx = None
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = settings.n_ctx * n_seq
        cp.n_batch = cp.n_ubatch = settings.n_batch
        cp.n_seq_max = n_seq
        cp.kv_unified = False
        # A step decoding several slots is a batch too: the prompt's extra threads (LoadSettings.
        # prefill_threads) would take the core the server's event loop runs on (`threads_for`).
        cp.n_threads = cp.n_threads_batch = settings.threads
        cp.flash_attn_type = FLASH_ATTN_TYPES[settings.flash_attn]
        cp.type_k = cp.type_v = ggml_type_id(settings.kv_type)
        cp.no_perf = False
        log = _init_backend()
        log.start()
        self.ctx = llama_cpp.llama_init_from_model(self.model, cp)
        ctx_log = log.stop()
        if not self.ctx:
            llama_cpp.llama_model_free(self.model)
            self.model = None
            raise ModelLoadError(f"llama.cpp could not create a context for {n_seq} sequences: "
                                 f"{context_error(settings, ctx_log)}")
        self.flash_attn_on = flash_attn_resolved(settings.flash_attn, ctx_log)
        self.context_log = ctx_log  # this context's, not the minimal one's
        self.settings = settings
        self.n_seq = n_seq
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.n_ctx = int(llama_cpp.llama_n_ctx(self.ctx))
        self.n_ctx_seq = int(llama_cpp.llama_n_ctx_seq(self.ctx))
        self.n_batch = settings.n_batch
        self._batch_threads = settings.threads

    # --- per-sequence KV cells ---------------------------------------------------------
    def seq_cells(self, seq: int) -> int:
        """Cells sequence `seq` holds, as llama.cpp reports them."""
        return int(llama_cpp.llama_memory_seq_pos_max(self.memory, seq)) + 1

    def seq_truncate(self, seq: int, keep: int) -> int:
        """Drop the cells of `seq` from position `keep` on; returns how many are kept."""
        if llama_cpp.llama_memory_seq_rm(self.memory, seq, keep, -1):
            return keep
        llama_cpp.llama_memory_seq_rm(self.memory, seq, -1, -1)  # a whole sequence always goes
        return 0

    def seq_state(self, seq: int) -> bytearray | None:
        """Sequence `seq`'s state (its KV cells) as llama.cpp writes it; None when it gives nothing."""
        size = int(llama_cpp.llama_state_seq_get_size(self.ctx, seq))
        if size <= 0:
            return None
        blob = bytearray(size)
        ptr = (ctypes.c_uint8 * size).from_buffer(blob)
        n = int(llama_cpp.llama_state_seq_get_data(self.ctx, ptr, size, seq))
        del ptr
        return blob if n == size else None

    def set_seq_state(self, seq: int, blob: bytearray) -> bool:
        """Put a state `seq_state` wrote (of any sequence of this context) into sequence `seq`, in place of
        what it held; False, the sequence empty, when llama.cpp refuses it."""
        self.seq_truncate(seq, 0)
        ptr = (ctypes.c_uint8 * len(blob)).from_buffer(blob)
        ok = int(llama_cpp.llama_state_seq_set_data(self.ctx, ptr, len(blob), seq)) > 0
        del ptr
        if not ok:
            self.seq_truncate(seq, 0)
        return ok

    # --- decode -------------------------------------------------------------------------
    def threads_for(self, wide: bool) -> int:
        """Set the threads of the next batches; returns the count. A wide batch runs on the prompt's
        threads (LoadSettings.prefill_threads), others on `settings.threads`; a one-token batch runs on
        `settings.threads` either way (llama.cpp's choice).

        The scheduler calls a step wide when it holds one sequence's tokens (a prompt's chunk, one
        slot's drafts: the event loop has one stream to write) or any drafts: on 2 cores a drafted
        token cost 0.37 of a one-token step with 2 threads and 0.68 with 1 (SmolLM2 Q4_1, 10 tokens
        after 500), so drafts could bring at most 2.7x, or 1.5x, and at 4 slots hardly ever paid.
        Several slots' plain steps stay on `settings.threads`: the loop writes to several streams
        meanwhile, and a preempted thread stalls the others at every barrier."""
        n = self.settings.prefill_threads if wide else self.settings.threads
        if n != self._batch_threads:
            llama_cpp.llama_set_n_threads(self.ctx, self.settings.threads, n)
            self._batch_threads = n
        return n

    def decode_batch(self, batch: TokenBatch) -> int:
        """Evaluate a filled batch; the C status (0 is success)."""
        return int(llama_cpp.llama_decode(self.ctx, batch.struct))

    def sample_at(self, sampler: ctypes.c_void_p, index: int) -> int:
        """Sample from the logits of batch entry `index` (accepts the token into the chain).
        The GIL is kept: sampling is short, and the scheduler samples every row in a row."""
        return int(_sample_holding_gil(sampler, self.ctx, index))

    def row_at(self, index: int) -> np.ndarray:
        """A copy of the raw logits after batch entry `index` (its logits kept)."""
        return np.ctypeslib.as_array(_logits_holding_gil(self.ctx, index), shape=(self.n_vocab,)).copy()

    def lead_at(self, index: int) -> tuple[int, float]:
        """The likeliest token after batch entry `index` (its logits kept) and by how much its logit
        leads the runner-up's: raw logits, nothing accepted into any sampler (a draft's check)."""
        return lead_of(np.ctypeslib.as_array(_logits_holding_gil(self.ctx, index), shape=(self.n_vocab,)))

    def top_prob_at(self, index: int) -> tuple[int, float]:
        """The likeliest token after batch entry `index` and its probability (softmax of the raw
        logits): a draft model's guess and how sure it is of it."""
        return top_prob_of(np.ctypeslib.as_array(_logits_holding_gil(self.ctx, index), shape=(self.n_vocab,)))


class TokenBatch:
    """A `llama_batch` of up to `capacity` tokens, one sequence id each, over Python-owned arrays."""

    def __init__(self, capacity: int, n_seq: int):
        self.capacity = capacity
        self.tokens = (llama_cpp.llama_token * capacity)()
        self.pos = (llama_cpp.llama_pos * capacity)()
        self.n_seq_id = (ctypes.c_int32 * capacity)(*([1] * capacity))
        self._seq_ids = [(llama_cpp.llama_seq_id * 1)(s) for s in range(n_seq)]
        self._seq_ptrs = [ctypes.cast(a, ctypes.POINTER(llama_cpp.llama_seq_id)) for a in self._seq_ids]
        self.seq_id = (ctypes.POINTER(llama_cpp.llama_seq_id) * capacity)()
        self.logits = (ctypes.c_int8 * capacity)()
        self.struct = llama_cpp.llama_batch()
        self.struct.token = ctypes.cast(self.tokens, ctypes.POINTER(llama_cpp.llama_token))  # type: ignore[assignment]
        self.struct.embd = None  # type: ignore[assignment]
        self.struct.pos = ctypes.cast(self.pos, ctypes.POINTER(llama_cpp.llama_pos))  # type: ignore[assignment]
        self.struct.n_seq_id = ctypes.cast(self.n_seq_id, ctypes.POINTER(ctypes.c_int32))  # type: ignore[assignment]
        self.struct.seq_id = ctypes.cast(self.seq_id, ctypes.POINTER(ctypes.POINTER(llama_cpp.llama_seq_id)))  # type: ignore[assignment]
        self.struct.logits = ctypes.cast(self.logits, ctypes.POINTER(ctypes.c_int8))  # type: ignore[assignment]
        self.n = 0

    def clear(self) -> None:
        self.n = 0

    @property
    def room(self) -> int:
        return self.capacity - self.n

    def add_one(self, token: int, pos: int, seq: int) -> int:
        """Append one token whose logits are kept (a decoding sequence's next); returns its index."""
        i = self.n
        if i >= self.capacity:
            raise EngineError(f"a batch of {self.capacity} tokens has no room for one more")
        self.tokens[i], self.pos[i], self.seq_id[i], self.logits[i] = token, pos, self._seq_ptrs[seq], 1
        self.n = self.struct.n_tokens = i + 1
        return i

    def add_all(self, tokens: Sequence[int], first_pos: int, seq: int) -> None:
        """Append tokens of one sequence at positions first_pos…, the logits of each kept (a draft)."""
        self.add(tokens, first_pos, seq, True)
        self.logits[self.n - len(tokens) : self.n] = [1] * len(tokens)

    def add(self, tokens: Sequence[int], first_pos: int, seq: int, last_logits: bool) -> int:
        """Append tokens of one sequence at positions first_pos…; returns the batch index of the
        last one (whose logits are kept when `last_logits`)."""
        k = len(tokens)
        i, j = self.n, self.n + k
        if j > self.capacity or k == 0:
            raise EngineError(f"a batch of {self.capacity} tokens has no room for {k} more")
        self.tokens[i:j] = list(tokens)
        self.pos[i:j] = list(range(first_pos, first_pos + k))
        self.seq_id[i:j] = [self._seq_ptrs[seq]] * k
        self.logits[i:j] = [0] * k
        self.logits[j - 1] = 1 if last_logits else 0
        self.n = self.struct.n_tokens = j
        return j - 1


@dataclass(frozen=True)
class LoadedBatchModel:
    path: Path
    header: GGUFHeader
    runtime: BatchRuntime
    device: DeviceReport
    bytes_per_cell: int


def load_batch_model(path: str | Path, settings: LoadSettings, n_seq: int) -> LoadedBatchModel:
    """Check the file, then load it for `n_seq` parallel sequences of `settings.n_ctx` tokens each.

    Raises:
        ModelLoadError: missing, truncated or non-GGUF file, or llama.cpp refused it.
    """
    p = Path(path)
    header = read_header(p)
    check_chat_model(header, p.name)
    layers = resolve_gpu_layers(settings.n_gpu_layers, header, settings)
    rt = BatchRuntime(p, settings, n_seq, layers, header.n_layer)
    bpc = kv_bytes_per_cell(header, settings.kv_type, settings.kv_type)
    return LoadedBatchModel(p, header, rt, device_report(settings.n_gpu_layers, rt.offload, layers), bpc)
