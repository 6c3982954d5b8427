"""A thin, lean layer over llama.cpp's C API (through llama-cpp-python's ctypes bindings).

Prefill drives llama.cpp directly rather than through `Llama.create_chat_completion`,
whose stream re-decodes the whole answer for every token. Every ctypes call here
releases the GIL; the decode step makes two of them (decode, sample), so a busy
GUI thread has as few chances as possible to delay it.
"""

from __future__ import annotations

import ctypes
import functools
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from prefill.engine.errors import EngineError, GrammarError, ModelLoadError
from prefill.engine.llama.grammar_sampler import Constraint, GrammarSampler
from prefill.engine.llama.kv_sizes import ggml_type_id
from prefill.engine.settings import LoadSettings, SamplingSettings, ServeSampling

# llama.cpp's enum llama_flash_attn_type, by the setting's words.
FLASH_ATTN_TYPES = {"auto": -1, "off": 0, "on": 1}
# How llama.cpp logs what it decided at context creation: "flash_attn = enabled" (set, or turned on for
# a quantised V cache), "resolve_fused_ops: Flash Attention enabled" (auto, resolved by the backend).
_FLASH_ATTN_SAID = re.compile(r"flash_attn\s*=\s*(enabled|disabled)|Flash Attention (enabled|disabled)")
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_DEVICE = re.compile(r"using device (\S+) \(([^)]*)\)")


class _LogCapture:
    """Collects llama.cpp's log lines during a load; the C callback must outlive every call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lines: list[str] = []
        self.capturing = False
        self.callback = llama_cpp.llama_log_callback(self._on_log)
        llama_cpp.llama_log_set(self.callback, ctypes.c_void_p(0))

    def _on_log(self, level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        if self.capturing:
            with self.lock:
                self.lines.append(text.decode("utf-8", errors="replace"))

    def start(self) -> None:
        with self.lock:
            self.lines = []
        self.capturing = True

    def stop(self) -> str:
        self.capturing = False
        with self.lock:
            return "".join(self.lines)


_backend_lock = threading.Lock()
_log: _LogCapture | None = None


def _load_backend_modules() -> None:
    """Load llama.cpp's backends when the build keeps them as modules (GGML_BACKEND_DL=ON).

    The portable build of the installers has one CPU module per instruction set, picked at
    run time. ggml looks for them only beside the executable and in the working folder; in a
    venv or a frozen app they are in llama_cpp/lib. A build with backends linked in: no-op.
    """
    from llama_cpp import _ggml  # the bindings' own handle on libggml, and where it lives

    try:
        # By soname: the wheel ships libggml.so and libggml.so.0 as two files (two instances);
        # the backends must register with the one libllama links.
        ggml = ctypes.CDLL("libggml.so.0") if sys.platform.startswith("linux") else _ggml.libggml
    except OSError:
        ggml = _ggml.libggml
    ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
    ggml.ggml_backend_reg_count.argtypes = []
    if ggml.ggml_backend_reg_count() > 0:
        return
    ggml.ggml_backend_load_all_from_path.restype = None
    ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load_all_from_path(str(_ggml.libggml_base_path).encode("utf-8"))


def _init_backend() -> _LogCapture:
    global _log
    with _backend_lock:
        if _log is None:
            log = _LogCapture()  # first, so the module loader's lines land in the log
            log.start()
            _load_backend_modules()
            llama_cpp.llama_backend_init()
            log.stop()
            _log = log
        return _log


def supports_gpu_offload() -> bool:
    """Whether this llama.cpp build has a GPU backend (CUDA, Metal, Vulkan…)."""
    _init_backend()
    return bool(llama_cpp.llama_supports_gpu_offload())


@dataclass(frozen=True)
class OffloadReport:
    gpu_layers: int  # layers llama.cpp said it offloaded
    total_layers: int
    device: str  # "" when on the CPU


def _parse_offload(log: str, n_layer: int) -> OffloadReport:
    m = _OFFLOADED.search(log)
    d = _DEVICE.search(log)
    device = f"{d.group(1)} ({d.group(2)})" if d else ""
    if m:
        return OffloadReport(int(m.group(1)), int(m.group(2)), device)
    return OffloadReport(0, n_layer + 1, device)


def lead_of(row: np.ndarray) -> tuple[int, float]:
    """The likeliest token of a row of raw logits and by how much its logit leads the runner-up's
    (infinite for a one-token vocabulary; 0 on a tie, the first of the tied being the likeliest).
    The row is read in place, not copied."""
    best = int(row.argmax())
    runner_up = max(float(row[:best].max(initial=-np.inf)), float(row[best + 1 :].max(initial=-np.inf)))
    return best, float(row[best]) - runner_up


def top_prob_of(row: np.ndarray) -> tuple[int, float]:
    """The likeliest token of a row of raw logits and its probability (softmax of the row)."""
    best = int(row.argmax())
    return best, 1.0 / float(np.exp(row - row[best]).sum())


class LlamaRuntime:
    """One loaded model and its context. Not thread-safe: one owner thread uses it."""

    def __init__(
        self, path: Path, settings: LoadSettings, n_gpu_layers: int, n_layer: int,
        progress: Callable[[float], bool] | None = None,
    ):
        log = _init_backend()
        self.settings = settings
        mp = llama_cpp.llama_model_default_params()
        mp.n_gpu_layers = n_gpu_layers
        # ggml's AMX kernels die with SIGILL on Sapphire Rapids VMs (reproduced here, while plain AMX
        # instructions run fine), and they live in the extra buffer types: off where AMX is.
        mp.use_extra_bufts = extra_buffer_types_safe()
        if progress is not None:  # return False from it to abandon the load
            keep_alive = llama_cpp.llama_progress_callback(lambda p, _user: bool(progress(float(p))))
            mp.progress_callback = keep_alive
        log.start()
        self.model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
        load_log = log.stop()
        if not self.model:
            raise ModelLoadError(f"llama.cpp could not load {path.name}: {_last_error(load_log)}")
        self.offload = _parse_offload(load_log, n_layer)
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = settings.n_ctx
        cp.n_batch = settings.n_batch
        cp.n_ubatch = settings.n_batch
        cp.n_threads = settings.threads
        cp.n_threads_batch = settings.prefill_threads
        cp.flash_attn_type = FLASH_ATTN_TYPES[settings.flash_attn]
        cp.type_k = cp.type_v = ggml_type_id(settings.kv_type)
        cp.no_perf = False
        log.start()
        self.ctx = llama_cpp.llama_init_from_model(self.model, cp)
        ctx_log = log.stop()
        if not self.ctx:
            llama_cpp.llama_model_free(self.model)
            self.model = None
            raise ModelLoadError(f"llama.cpp could not create a context: {context_error(settings, ctx_log)}")
        self.load_log = load_log + ctx_log
        self.context_log = ctx_log  # what llama.cpp said making the context: its buffers' sizes
        self.flash_attn_on = flash_attn_resolved(settings.flash_attn, ctx_log)
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        model = self.model
        self.recurrent = bool(llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(model))
        self.n_ctx = int(llama_cpp.llama_n_ctx(self.ctx))
        # llama.cpp caps the batch at the requested context and then rounds the context up (300 -> 512),
        # and asserts (aborts) on a longer decode: the pieces are what it reports, not what was asked.
        self.n_batch = min(int(llama_cpp.llama_n_batch(self.ctx)), int(llama_cpp.llama_n_ubatch(self.ctx)))
        self._has_logits = False  # llama_sampler_sample asserts when the last decode left none
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        self.eog = frozenset(t for t in range(self.n_vocab) if llama_cpp.llama_vocab_is_eog(self.vocab, t))
        self._pieces: dict[int, bytes] = {}
        self._one = (llama_cpp.llama_token * 1)()
        self._one_batch = llama_cpp.llama_batch_get_one(self._one, 1)
        self._piece_buf = ctypes.create_string_buffer(256)
        self._constrained: dict[int, GrammarSampler] = {}  # held until free_sampler
        self._all_batch: llama_cpp.llama_batch | None = None  # decode_all's batch, made on first use
        self._all_tokens = (llama_cpp.llama_token * 0)()
        self._all_logits = (ctypes.c_int8 * 0)()
        self._all_rows = 0  # entries of the last decode_all whose logits top_two_at may read

    # --- text <-> tokens ---------------------------------------------------------
    def tokenize(self, text: str, add_special: bool = False) -> list[int]:
        """Tokens for `text`; `add_special` puts the model's BOS first when it asks for one.

        llama.cpp's own add_special asserts (aborts) when the model asks for a BOS or an EOS
        it does not have, and would end a chat prompt with EOS: BOS is added here instead.
        """
        data = text.encode("utf-8")
        n_max = len(data) + 8
        buf = (llama_cpp.llama_token * n_max)()
        n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, n_max, False, True)
        if n < 0:
            n_max = -n
            buf = (llama_cpp.llama_token * n_max)()
            n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, n_max, False, True)
        if n < 0:
            raise EngineError("the text could not be tokenized")
        bos = self.bos_id
        return ([bos] if add_special and self.add_bos and bos >= 0 else []) + list(buf[:n])

    def piece(self, token: int) -> bytes:
        """The bytes a token stands for (special tokens render as nothing). Cached per token."""
        p = self._pieces.get(token)
        if p is None:
            n = llama_cpp.llama_token_to_piece(self.vocab, token, self._piece_buf, 256, 0, False)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, -n, 0, False)
                p = buf.raw[:n]
            else:
                p = self._piece_buf.raw[:n]
            self._pieces[token] = p
        return p

    @functools.cached_property
    def longest_token_bytes(self) -> int:
        """The most text one token stands for, special tokens written out included (a text of B bytes
        is at least B / this many tokens). Read from the whole vocabulary once (tens of ms)."""
        buf = ctypes.create_string_buffer(1024)
        longest = 1
        for t in range(self.n_vocab):
            n = llama_cpp.llama_token_to_piece(self.vocab, t, buf, 1024, 0, True)
            longest = max(longest, n if n >= 0 else -n)
        return longest

    @functools.cached_property
    def byte_tokens(self) -> dict[int, int]:
        """A token for each byte that one token stands for alone (byte-level vocabularies have all
        256): text fed to a grammar byte by byte. Read from the whole vocabulary once."""
        buf = ctypes.create_string_buffer(8)
        found: dict[int, int] = {}
        for t in range(self.n_vocab):
            if llama_cpp.llama_token_to_piece(self.vocab, t, buf, 8, 0, False) == 1:
                found.setdefault(buf.raw[0], t)
        return found

    def is_single_token(self, text: str) -> bool:
        """Whether the vocabulary has `text` as one token of its own (a special or added token)."""
        ids = self.tokenize(text)
        return len(ids) == 1 and self.token_text(ids[0]) == text

    def render_as_text(self, texts: Sequence[str]) -> None:
        """Show these tokens' text in `piece` even where llama.cpp renders them as nothing (control
        tokens): the reasoning parser reads its markers from the stream."""
        for text in texts:
            if self.is_single_token(text):
                self._pieces[self.tokenize(text)[0]] = text.encode("utf-8")

    def token_text(self, token: int) -> str:
        t = llama_cpp.llama_vocab_get_text(self.vocab, token)
        return t.decode("utf-8", errors="replace") if t else ""

    @property
    def bos_id(self) -> int:
        return int(llama_cpp.llama_vocab_bos(self.vocab))

    @property
    def eos_id(self) -> int:
        return int(llama_cpp.llama_vocab_eos(self.vocab))

    @property
    def add_bos(self) -> bool:
        return bool(llama_cpp.llama_vocab_get_add_bos(self.vocab))

    @property
    def add_eos(self) -> bool:
        return bool(llama_cpp.llama_vocab_get_add_eos(self.vocab))

    @property
    def vocab_type(self) -> int:
        """llama.cpp's kind of tokenizer (`llama_vocab_type`: 1 SentencePiece, 2 byte-level BPE, 3 WordPiece…)."""
        return int(llama_cpp.llama_vocab_type(self.vocab))

    # --- the KV cache ------------------------------------------------------------
    def kv_cells_used(self) -> int:
        """Cells of sequence 0 in the cache, as llama.cpp reports them."""
        return int(llama_cpp.llama_memory_seq_pos_max(self.memory, 0)) + 1

    def kv_truncate(self, keep: int) -> bool:
        """Drop every cell from position `keep` on. False when llama.cpp cannot keep exactly the
        first `keep` (recurrent or hybrid memory trims only whole; a sliding window may have let
        go of what continuing needs): the cache is then cleared, and holds nothing."""
        self._has_logits = False
        self._all_rows = 0
        if keep and llama_cpp.llama_memory_seq_rm(self.memory, 0, keep, -1) and self._holds_prefix(keep):
            return True
        llama_cpp.llama_memory_clear(self.memory, True)
        return keep == 0

    @property
    def sliding_window(self) -> int:
        """The model's attention window in tokens (0: it attends to the whole context)."""
        return int(llama_cpp.llama_model_n_swa(self.model))

    def _holds_prefix(self, keep: int) -> bool:
        """Whether the cells still there let decoding continue at position `keep`. (A recurrent
        state that llama.cpp agreed to trim is whole; a sliding window must still hold its span.)"""
        if self.recurrent:
            return True
        pos_min = int(llama_cpp.llama_memory_seq_pos_min(self.memory, 0))
        n_swa = int(llama_cpp.llama_model_n_swa(self.model))
        return pos_min == 0 or (n_swa > 0 and 0 <= pos_min <= max(0, keep - n_swa))

    # --- decode -------------------------------------------------------------------
    def decode(self, tokens: Sequence[int]) -> None:
        """Evaluate tokens that continue the cache: 1 to `n_batch` of them."""
        n = len(tokens)
        if not 0 < n <= self.n_batch:  # llama.cpp asserts on more than its batch
            raise EngineError(f"cannot decode {n} tokens at once (1 to {self.n_batch})")
        arr = (llama_cpp.llama_token * n)(*tokens)
        rc = llama_cpp.llama_decode(self.ctx, llama_cpp.llama_batch_get_one(arr, n))
        self._has_logits = rc == 0
        self._all_rows = 0
        if rc != 0:
            raise EngineError(f"llama.cpp failed to decode (code {rc}): the KV cache may be full")

    def decode_one(self, token: int) -> int:
        """Evaluate one token; the C status (0 is success, 1 is no room in the cache)."""
        self._one[0] = token
        rc = int(llama_cpp.llama_decode(self.ctx, self._one_batch))
        self._has_logits = rc == 0
        self._all_rows = 0
        return rc

    def decode_all(self, tokens: Sequence[int]) -> int:
        """Evaluate tokens that continue the cache, keeping the logits of every one of them (for
        `top_two_at`): a speculative draft checked in one step. The C status (0 is success)."""
        n = len(tokens)
        if not 0 < n <= self.n_batch:  # llama.cpp asserts on more than its batch
            raise EngineError(f"cannot decode {n} tokens at once (1 to {self.n_batch})")
        if self._all_batch is None or len(self._all_tokens) < n:
            self._all_tokens = (llama_cpp.llama_token * max(n, 32))()
            self._all_logits = (ctypes.c_int8 * max(n, 32))(*([1] * max(n, 32)))
            batch = llama_cpp.llama_batch()
            batch.token = ctypes.cast(self._all_tokens, ctypes.POINTER(llama_cpp.llama_token))  # type: ignore[assignment]
            batch.logits = ctypes.cast(self._all_logits, ctypes.POINTER(ctypes.c_int8))  # type: ignore[assignment]
            # pos and seq_id left NULL: llama.cpp continues sequence 0 from its last position.
            self._all_batch = batch
        self._all_tokens[:n] = list(tokens)
        self._all_batch.n_tokens = n
        rc = int(llama_cpp.llama_decode(self.ctx, self._all_batch))
        self._has_logits = rc == 0
        self._all_rows = n if rc == 0 else 0
        return rc

    def logits_at(self, index: int) -> np.ndarray:
        """A copy of the raw logits after entry `index` of the last `decode_all`, or after the last
        token decoded (-1)."""
        if index == -1 and not self._has_logits or index != -1 and not 0 <= index < self._all_rows:
            raise EngineError(f"no logits kept for entry {index} of the last decode")
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.ctx, index), shape=(self.n_vocab,)).copy()

    def top_two_at(self, index: int) -> tuple[int, float]:
        """The likeliest token after entry `index` of the last `decode_all`, and by how much its
        logit leads the runner-up's (raw logits: no sampler applied, nothing accepted)."""
        if not 0 <= index < self._all_rows:
            raise EngineError(f"no logits kept for entry {index} of the last decode")
        return lead_of(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.ctx, index), shape=(self.n_vocab,)))

    def top_prob(self) -> tuple[int, float]:
        """The likeliest token after the last one decoded and its probability (softmax of the raw
        logits): a draft model's guess and how sure it is of it."""
        if not self._has_logits:
            raise EngineError("nothing was decoded to read logits from")
        return top_prob_of(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.ctx, -1), shape=(self.n_vocab,)))

    def kv_drop_from(self, pos: int) -> bool:
        """Drop sequence 0's cells from `pos` on, and nothing else (the tail of a rejected draft).
        False when llama.cpp cannot (recurrent memory); the cache is then as it was."""
        self._has_logits = False
        self._all_rows = 0
        return bool(llama_cpp.llama_memory_seq_rm(self.memory, 0, pos, -1))

    def new_sampler(self, s: SamplingSettings, seed: int, constraint: Constraint | None = None) -> ctypes.c_void_p:
        """llama.cpp's chain: (end-of-generation banned), penalties, top-k, top-p, min-p, temperature.
        A `ServeSampling` adds what an OpenAI request may ask for: frequency and presence penalties
        and the ban on end-of-generation tokens.

        A `constraint` keeps the answer inside its grammar, judged outside the chain as llama.cpp's
        common sampler does (see grammar_sampler.py). Raises GrammarError, before anything is
        sampled, when llama.cpp rejects the grammar. Free the sampler with `free_sampler`."""
        pre, post = self._pre_samplers(s), self._post_samplers(s, seed)
        if constraint is None:
            return _chain(pre + post)
        keep = 1 if s.temperature <= 0 else s.top_k if s.top_k > 0 else None
        pre_chain, post_chain = _chain(pre), _chain(post)
        try:
            held = self._grammar_sampler(pre_chain, post_chain, keep, constraint)
        except BaseException:
            llama_cpp.llama_sampler_free(pre_chain)
            llama_cpp.llama_sampler_free(post_chain)
            raise
        pointer: ctypes.c_void_p = held.pointer
        self._constrained[_address(pointer)] = held
        return pointer

    def _pre_samplers(self, s: SamplingSettings) -> list[ctypes.c_void_p]:
        """The samplers that change logits and drop nothing: the logit biases (a request's, the
        end-of-generation ban), penalties."""
        frequency_penalty = presence_penalty = 0.0
        biases: dict[int, float] = {}
        if isinstance(s, ServeSampling):
            frequency_penalty, presence_penalty = s.frequency_penalty, s.presence_penalty
            biases = {t: float("-inf") if b <= -100 else b for t, b in s.logit_bias if t < self.n_vocab}
            if s.ignore_eos:
                biases.update((t, float("-inf")) for t in self.eog)
        out = []
        if biases:
            bias = (llama_cpp.llama_logit_bias * len(biases))()
            for i, (t, b) in enumerate(sorted(biases.items())):
                bias[i].token, bias[i].bias = t, b  # type: ignore[assignment]
            out.append(llama_cpp.llama_sampler_init_logit_bias(self.n_vocab, len(biases), bias))
        if s.repeat_penalty != 1.0 or frequency_penalty or presence_penalty:
            out.append(llama_cpp.llama_sampler_init_penalties(
                self.n_vocab, s.repeat_last_n, s.repeat_penalty, frequency_penalty, presence_penalty
            ))
        return out

    @staticmethod
    def _post_samplers(s: SamplingSettings, seed: int) -> list[ctypes.c_void_p]:
        """Top-k, top-p, min-p, temperature and the pick (greedy at temperature 0)."""
        if s.temperature <= 0:
            return [llama_cpp.llama_sampler_init_greedy()]
        out = []
        if s.top_k > 0:
            out.append(llama_cpp.llama_sampler_init_top_k(s.top_k))
        out.append(llama_cpp.llama_sampler_init_top_p(s.top_p, 1))
        if s.min_p > 0:
            out.append(llama_cpp.llama_sampler_init_min_p(s.min_p, 1))
        out.append(llama_cpp.llama_sampler_init_temp(s.temperature))
        out.append(llama_cpp.llama_sampler_init_dist(seed & 0xFFFFFFFF))
        return out

    def _grammar_sampler(
        self, pre: ctypes.c_void_p, post: ctypes.c_void_p, keep: int | None, constraint: Constraint
    ) -> GrammarSampler:
        if not constraint.grammar.strip():
            raise GrammarError("the grammar is empty")
        log = _init_backend()
        log.start()
        grammar = llama_cpp.llama_sampler_init_grammar(self.vocab, constraint.grammar.encode("utf-8"), b"root")
        why = log.stop()
        if not grammar:
            raise GrammarError(f"llama.cpp rejected the grammar: {_last_error(why)}")
        try:
            held = GrammarSampler(self.vocab, pre, post, keep, grammar, constraint.lazy_trigger, self.n_vocab,
                                  lambda: self.byte_tokens)
        except BaseException:
            llama_cpp.llama_sampler_free(grammar)
            raise
        if held.trigger and not held.starts_with_trigger():
            held.pre = held.post = None  # the caller frees the chains
            held.close()
            raise GrammarError(f"the grammar does not begin with its trigger {constraint.lazy_trigger!r}")
        return held

    def constraint_of(self, sampler: ctypes.c_void_p) -> GrammarSampler | None:
        """The grammar side of a sampler from `new_sampler` (None for a plain chain)."""
        return self._constrained.get(_address(sampler))

    def sample(self, sampler: ctypes.c_void_p) -> int:
        """The next token from the last decode's logits."""
        if not self._has_logits:  # llama_sampler_sample asserts on missing logits
            raise EngineError("nothing was decoded to sample from")
        return int(llama_cpp.llama_sampler_sample(sampler, self.ctx, -1))

    def accept(self, sampler: ctypes.c_void_p, token: int) -> None:
        """Tell a sampler of a token fed without sampling it (its penalties and grammar follow it)."""
        llama_cpp.llama_sampler_accept(sampler, token)

    def free_sampler(self, sampler: ctypes.c_void_p) -> None:
        """Free a sampler from `new_sampler`, with the chain and grammar a constrained one holds."""
        held = self._constrained.pop(_address(sampler), None)
        if held is not None:
            held.close()
        else:
            llama_cpp.llama_sampler_free(sampler)

    # --- llama.cpp's own counters ------------------------------------------------------
    def perf(self) -> llama_cpp.llama_perf_context_data:
        data: llama_cpp.llama_perf_context_data = llama_cpp.llama_perf_context(self.ctx)
        return data

    def perf_reset(self) -> None:
        llama_cpp.llama_perf_context_reset(self.ctx)

    def model_bytes(self) -> int:
        return int(llama_cpp.llama_model_size(self.model))

    def close(self) -> None:
        if getattr(self, "ctx", None):
            llama_cpp.llama_free(self.ctx)
            self.ctx = None
        if getattr(self, "model", None):
            llama_cpp.llama_model_free(self.model)
            self.model = None

    def __del__(self) -> None:
        self.close()


def extra_buffer_types_safe() -> bool:
    """Whether llama.cpp may put weights in its extra buffer types (repacked, AMX): not on a CPU
    with AMX, whose ggml kernels die with SIGILL (seen on Sapphire Rapids VMs)."""
    return not _cpu_has_amx()


@functools.cache
def _cpu_has_amx() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return any(line.startswith("flags") and " amx_int8" in line for line in f)
    except OSError:
        return False


def _chain(samplers: list[ctypes.c_void_p]) -> ctypes.c_void_p:
    chain: ctypes.c_void_p = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    for smpl in samplers:
        llama_cpp.llama_sampler_chain_add(chain, smpl)
    return chain


def _address(pointer: Any) -> int:
    return ctypes.cast(pointer, ctypes.c_void_p).value or 0


def flash_attn_resolved(setting: str, ctx_log: str) -> bool:
    """Whether flash attention is on in a context just created with `setting` ("auto", "on", "off"):
    what llama.cpp's log of the creation said last, else the setting. "auto" with nothing said counts
    as off: speculation and the fit estimate then take the safe side."""
    said = _FLASH_ATTN_SAID.findall(ctx_log)
    if said:
        return "enabled" in said[-1]
    return setting == "on"


def context_error(settings: LoadSettings, ctx_log: str) -> str:
    """Why a context could not be made, in words where Prefill knows better than the log line."""
    if settings.kv_type != "f16" and "requires Flash Attention" in ctx_log:
        return (f"the {settings.kv_type} KV cache needs flash attention, which this backend cannot run "
                "for this model: choose the f16 KV cache")
    return _last_error(ctx_log)


def _last_error(log: str) -> str:
    """The log line that says why: llama.cpp's own error over its closing "failed to load model"."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    failed = [ln for ln in lines if "failed" in ln.lower()]
    return (errors or failed or lines or ["no reason given"])[-1]
