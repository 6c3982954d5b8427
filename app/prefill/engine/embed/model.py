"""An embedding or reranking GGUF, loaded in llama.cpp's embedding mode.

`EmbeddingModel.load(path, settings)` reads the header through the model door (`engine/gguf/guard.py`),
refuses a model that pools nothing (a chat model) in words, and creates one context with embeddings
on and the pooling the GGUF names. `embed` turns texts (or token lists) into unit-length vectors, as
OpenAI's are; `rerank` scores documents against a query with a reranker's head (pooling RANK).

Several inputs go to llama.cpp as separate sequences of one batch, as many as fit. A non-causal
model (BERT) must see a whole input in one micro-batch, and llama.cpp asserts (aborts) on an encoder
batch larger than it: the context's batch and micro-batch are both its whole length, and a batch is
packed to that bound, so no input is ever split and no call can reach the assert. A causal model
pooled on its last token (Qwen3-Embedding, e5-mistral) is the exception: its KV cache carries an
input across decodes of `CAUSAL_BATCH` tokens, which keeps the logits llama.cpp reserves per token
of a batch small.

Memory is llama.cpp's own figures: the weights (`llama_model_size`) and the context's buffers (its
compute and output buffers, and a KV cache for a causal model), read from the log of the context's
creation, so a model pool can weigh it against a chat model. One lock serialises calls: a
`llama_context` is not thread-safe, and a pool may hand the model to several request threads.
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import llama_cpp
import numpy as np

from prefill.engine.embed.errors import InputTooLong, NotAnEmbeddingModel
from prefill.engine.errors import EngineError, ModelLoadError
from prefill.engine.gguf.guard import read_model_header
from prefill.engine.gguf.header import GGUFHeader
from prefill.engine.gguf.model_kind import is_causal, pooling_of
from prefill.engine.llama.kv_sizes import kv_bytes_per_cell
from prefill.engine.llama.offload import resolve_gpu_layers
from prefill.engine.llama.runtime import _init_backend, _last_error, extra_buffer_types_safe
from prefill.engine.settings import LoadSettings

Kind = Literal["embedding", "rerank"]
Input = str | Sequence[int]
POOLING_NAMES = {
    llama_cpp.LLAMA_POOLING_TYPE_MEAN: "mean", llama_cpp.LLAMA_POOLING_TYPE_CLS: "cls",
    llama_cpp.LLAMA_POOLING_TYPE_LAST: "last", llama_cpp.LLAMA_POOLING_TYPE_RANK: "rank",
}
MAX_SEQUENCES = 64  # inputs per llama.cpp batch (LLAMA_MAX_SEQ is 256); more go in the next batch
CAUSAL_BATCH = 256  # tokens a decode for a causal model pooled on its last token
# "CPU compute buffer size =    13.01 MiB", "CUDA0 KV buffer size = 4.50 MiB", "CPU  output buffer size = 0.12 MiB"
_BUFFER = re.compile(r"(\w+)\s+(compute|output|KV) buffer size\s*=\s*([\d.]+) MiB")


class BadInput(EngineError):
    """An input that cannot be embedded: empty, or a token id outside the vocabulary."""


@dataclass(frozen=True)
class Memory:
    """What a model holds, in bytes: its weights, its KV cache (a causal model's; 0 for an encoder)
    and its compute and output buffers. Measured after a load, estimated before one."""

    weights: int
    kv: int
    compute: int
    measured: bool = True

    @property
    def context(self) -> int:
        return self.kv + self.compute

    @property
    def total(self) -> int:
        return self.weights + self.context


def _buffers(ctx_log: str) -> tuple[int, int]:
    """The KV and the compute + output buffers llama.cpp reported creating a context, in bytes."""
    kv = compute = 0.0
    for m in _BUFFER.finditer(ctx_log):
        if m.group(2) == "KV":
            kv += float(m.group(3))
        else:
            compute += float(m.group(3))
    return int(kv * 2**20), int(compute * 2**20)


def estimate_memory(path: str | Path, settings: LoadSettings | None = None) -> Memory:
    """What `EmbeddingModel.load(path, settings)` will take, from the header alone (for a pool's
    budget before the load): the weights exactly, a causal model's KV cache, and the compute
    buffers on the large side.

    Raises:
        GGUFError: the header cannot be read, or holds what llama.cpp would abort on.
    """
    header = read_model_header(Path(path).expanduser())
    n_ctx = _context_length(header.context_length, (settings or LoadSettings()).n_ctx)
    weights = sum(t.nbytes for t in header.tensors)
    kv = kv_bytes_per_cell(header) * n_ctx if is_causal(header) else 0
    # llama.cpp reserves an output row per sequence as wide as the vocabulary (7.5 MiB for BERT's
    # 30522 tokens at 64 sequences) beside the pooled vectors; the graph's buffers grow with the
    # context (measured: 5.9 MiB at 512 tokens of 384 wide, 1.8 MiB at 128; half again here)
    n_vocab = header.array_lengths.get("tokenizer.ggml.tokens", 0)
    causal = is_causal(header)
    chunked = causal and pooling_of(header) == llama_cpp.LLAMA_POOLING_TYPE_LAST
    n_batch = min(n_ctx, CAUSAL_BATCH) if chunked else n_ctx
    # a causal model reserves logits for every token of a batch, an encoder one row per sequence
    output = (n_vocab + header.n_embd) * (n_batch if causal else MAX_SEQUENCES) * 4
    attention = n_batch * n_ctx * max(header.n_head, 1) * 4 * 2 if causal else 0  # scores and softmax
    compute = output + attention + n_ctx * max(header.n_embd, 1) * 4 * 12
    return Memory(weights, kv, compute, measured=False)


def _context_length(n_train: int, asked: int) -> int:
    """An encoder reads one input in one micro-batch: the context, the batch and the micro-batch are
    one length, the model's trained one unless the settings ask for less."""
    return max(8, min(asked, n_train or asked))


class EmbeddingModel:
    """One embedding or reranking model and its context.

    Attributes:
        path: the GGUF.
        kind: "embedding" (vectors) or "rerank" (a score per document).
        pooling: "mean", "cls", "last" or "rank", as the GGUF names it.
        n_embd: the length of each vector (for a reranker, its head's outputs).
        n_ctx: the most tokens one input may have.
        n_batch: the most tokens one decode takes (`n_ctx` but for a causal model pooled on its last token).
        memory: weights, KV cache and compute buffers, in bytes (`memory.total` for a budget).
        in_flight: calls running or waiting; `on_idle` is called when it falls to 0.
    """

    KINDS: ClassVar[tuple[Kind, ...]] = ("embedding", "rerank")

    def __init__(self, path: Path, header: GGUFHeader, settings: LoadSettings, n_gpu_layers: int):
        log = _init_backend()
        self.path, self.settings = path, settings
        self._lock = threading.RLock()
        self._calls = 0  # embed, rerank and count calls running or waiting for the lock
        self._calls_lock = threading.Lock()
        self.on_idle: Callable[[], None] | None = None  # called when the last call running ends
        mp = llama_cpp.llama_model_default_params()
        mp.n_gpu_layers = n_gpu_layers
        mp.use_extra_bufts = extra_buffer_types_safe()
        log.start()
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
        load_log = log.stop()
        if not model:
            raise ModelLoadError(f"llama.cpp could not load {path.name}: {_last_error(load_log)}")
        self.model = model
        self.ctx: llama_cpp.llama_context_p | None = None
        self._batch: _Batch | None = None
        try:
            self._open_context(header, settings, log)
        except BaseException:
            self.close()
            raise

    def _open_context(self, header: GGUFHeader, settings: LoadSettings, log: object) -> None:
        from prefill.engine.llama.runtime import _LogCapture

        assert isinstance(log, _LogCapture)
        model = self.model
        n = _context_length(int(llama_cpp.llama_model_n_ctx_train(model)), settings.n_ctx)
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = n
        if pooling_of(header) == llama_cpp.LLAMA_POOLING_TYPE_LAST and is_causal(header):
            # A causal model pooled on its last token may read a long input over several decodes (its
            # KV cache carries the rest), and llama.cpp reserves a row of logits per token of a batch:
            # for a 150k vocabulary, 2.5 GB at 4096 tokens, 150 MB at CAUSAL_BATCH.
            cp.n_batch = cp.n_ubatch = min(n, CAUSAL_BATCH)
        cp.n_seq_max = MAX_SEQUENCES
        cp.kv_unified = True  # a causal model's KV cache is shared by the batch's sequences, not split
        cp.embeddings = True
        cp.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_UNSPECIFIED  # the GGUF's own
        cp.n_threads = settings.threads
        cp.n_threads_batch = settings.prefill_threads
        cp.no_perf = True
        log.start()
        ctx = llama_cpp.llama_init_from_model(model, cp)
        ctx_log = log.stop()
        if ctx and cp.n_ubatch < n and not llama_cpp.llama_get_memory(ctx):
            # no KV cache after all (an encoder): it must see each input whole in one micro-batch
            llama_cpp.llama_free(ctx)
            cp.n_batch = cp.n_ubatch = n
            log.start()
            ctx = llama_cpp.llama_init_from_model(model, cp)
            ctx_log = log.stop()
        if not ctx:
            raise ModelLoadError(f"llama.cpp could not create an embedding context: {_last_error(ctx_log)}")
        self.ctx = ctx
        pooling = int(llama_cpp.llama_pooling_type(ctx))
        if pooling not in POOLING_NAMES:
            raise NotAnEmbeddingModel(_not_embedding(self.path, header))
        self.pooling = POOLING_NAMES[pooling]
        self.kind: Kind = "rerank" if pooling == llama_cpp.LLAMA_POOLING_TYPE_RANK else "embedding"
        self.n_embd = (int(llama_cpp.llama_model_n_cls_out(model)) if self.kind == "rerank"
                       else int(llama_cpp.llama_model_n_embd_out(model)))
        self.n_batch = min(int(llama_cpp.llama_n_batch(ctx)), int(llama_cpp.llama_n_ubatch(ctx)))
        self.n_ctx = int(llama_cpp.llama_n_ctx(ctx)) if self.n_batch < n else self.n_batch
        self.vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        self.memory = Memory(int(llama_cpp.llama_model_size(model)), *_buffers(ctx_log))
        self._kv = llama_cpp.llama_get_memory(ctx)  # None for an encoder: it keeps nothing between calls
        self._frame = self._framing()
        self._rerank_template = _rerank_template(model)
        self._batch = _Batch(self.n_batch)

    # --- loading -------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, settings: LoadSettings | None = None) -> EmbeddingModel:
        """Load an embedding or reranking GGUF.

        Args:
            path: the GGUF file.
            settings: `n_ctx` caps the input length (the model's trained length when larger);
                `n_gpu_layers` and `n_threads` as for a chat model; the KV settings do not apply.

        Raises:
            GGUFError: the file is not a GGUF llama.cpp can load safely (the model door says why).
            NotAnEmbeddingModel: the model gives no vector per input (a chat model).
            ModelLoadError: llama.cpp refused the file or the context.
        """
        p = Path(path).expanduser()
        if not p.is_file():
            raise ModelLoadError(f"no model file at {p}")
        s = settings or LoadSettings()
        header = read_model_header(p)
        if pooling_of(header) in (None, llama_cpp.LLAMA_POOLING_TYPE_NONE):
            raise NotAnEmbeddingModel(_not_embedding(p, header))
        return cls(p, header, s, resolve_gpu_layers(s.n_gpu_layers, header, s))

    def close(self) -> None:
        """Free the context and the weights; the model cannot be used after."""
        with self._lock:
            if getattr(self, "ctx", None):
                llama_cpp.llama_free(self.ctx)
                self.ctx = None
            if getattr(self, "model", None):
                llama_cpp.llama_model_free(self.model)
                self.model = None

    def __del__(self) -> None:
        if hasattr(self, "_lock"):
            self.close()

    @property
    def in_flight(self) -> int:
        """Calls running or waiting: a pool never unloads a model while this is above 0."""
        return self._calls

    @contextmanager
    def _call(self) -> Iterator[None]:
        with self._calls_lock:
            self._calls += 1
        try:
            with self._lock:
                self._check_open()
                yield
        finally:
            with self._calls_lock:
                self._calls -= 1
                idle = self._calls == 0
            if idle and self.on_idle is not None:
                self.on_idle()

    @property
    def memory_bytes(self) -> int:
        """Weights and context buffers together, in bytes."""
        return self.memory.total

    @property
    def name(self) -> str:
        return self.path.name

    # --- tokens --------------------------------------------------------------------------
    def tokenize(self, text: str, special: bool = True) -> list[int]:
        """The tokens of `text`; with `special`, framed as the model reads one input ([CLS] text [SEP]
        for BERT). Special tokens written in the text are read as plain text."""
        with self._lock:
            self._check_open()
            tokens = self._tokenize(text, parse_special=False)
        if not special:
            return tokens
        head, tail = self._frame
        return head + tokens + tail

    def count_tokens(self, inputs: Sequence[Input]) -> list[int]:
        """How many tokens each input is, framed as `embed` reads it."""
        with self._call():
            return [len(t) for t in self._inputs(inputs, truncate=True, limit=None)]

    def token_lists(self, inputs: Sequence[Input], truncate: bool = False) -> list[list[int]]:
        """Each input as the tokens `embed` reads (texts framed, token lists as given), checked and,
        with `truncate`, cut to `n_ctx`: `embed` of these is `embed` of the inputs, and their lengths
        are what a caller counts as the tokens used.

        Raises:
            InputTooLong: an input is longer than `n_ctx` and `truncate` is off.
            BadInput: an empty token list, or a token outside the vocabulary.
        """
        with self._call():
            return self._inputs(inputs, truncate, self.n_ctx)

    def _check_open(self) -> None:
        if self.ctx is None or self._batch is None:
            raise EngineError(f"{self.name} has been closed")

    def _tokenize(self, text: str, parse_special: bool) -> list[int]:
        data = text.encode("utf-8", errors="replace")
        n_max = len(data) + 8
        for _ in range(2):
            buf = (llama_cpp.llama_token * n_max)()
            n = int(llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, n_max, False, parse_special))
            if n >= 0:
                return list(buf[:n])
            n_max = -n
        raise EngineError("the text could not be tokenized")

    def _framing(self) -> tuple[list[int], list[int]]:
        """The tokens around one input: BOS before, SEP and EOS after, where the model asks for them
        and has them (llama.cpp's own add_special asserts when a model asks for one it lacks)."""
        v = self.vocab
        bos, sep, eos = (int(f(v)) for f in (llama_cpp.llama_vocab_bos, llama_cpp.llama_vocab_sep,
                                             llama_cpp.llama_vocab_eos))
        head = [bos] if llama_cpp.llama_vocab_get_add_bos(v) and bos >= 0 else []
        tail = [sep] if llama_cpp.llama_vocab_get_add_sep(v) and sep >= 0 else []
        tail += [eos] if llama_cpp.llama_vocab_get_add_eos(v) and eos >= 0 else []
        return head, tail

    def _inputs(self, inputs: Sequence[Input], truncate: bool, limit: int | None) -> list[list[int]]:
        out: list[list[int]] = []
        for i, item in enumerate(inputs):
            if isinstance(item, str):
                tokens = self.tokenize(item)
                tail = self._frame[1]
            else:
                tokens = [int(t) for t in item]
                tail = []
                if not tokens:
                    raise BadInput(f"input {i} is an empty list of tokens")
                bad = next((t for t in tokens if not 0 <= t < self.n_vocab), None)
                if bad is not None:
                    raise BadInput(f"input {i} holds the token {bad}, outside this model's {self.n_vocab} tokens")
            if limit is not None and len(tokens) > limit:
                if not truncate:
                    raise InputTooLong(i, len(tokens), limit)
                # keep the closing special tokens: the model was trained on inputs that end with them
                keep = limit - len(tail)
                tokens = tokens[:keep] + tail if keep > 0 else tokens[:limit]
            out.append(tokens)
        return out

    # --- vectors and scores --------------------------------------------------------------
    def embed(self, inputs: Sequence[Input], truncate: bool = False, normalize: bool = True) -> np.ndarray:
        """One vector per input, in order, as rows of a float32 array (inputs × `n_embd`).

        Args:
            inputs: texts, or token lists (used as given, with no framing added).
            truncate: cut an input longer than `n_ctx` to fit (keeping its closing special tokens)
                instead of refusing it.
            normalize: scale each vector to unit length, as OpenAI's embeddings are.

        Raises:
            InputTooLong: an input is longer than `n_ctx` and `truncate` is off.
            BadInput: an empty token list, or a token outside the vocabulary.
        """
        if self.kind != "embedding":
            raise EngineError(f"{self.name} is a reranker: it scores documents against a query, and gives "
                              "no embeddings")
        with self._call():
            vectors = self._run(self._inputs(inputs, truncate, self.n_ctx), self.n_embd)
        if normalize and len(vectors):
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms > 0, norms, 1.0)
        return vectors.astype(np.float32, copy=False)

    def rerank(self, query: str, documents: Sequence[str], truncate: bool = False) -> list[float]:
        """Each document's relevance to `query`: the reranker's first output, raw (higher is more
        relevant), in the documents' order.

        The pair is written as the GGUF's `rerank` template says where it has one ({query} and
        {document} replaced), else as BOS query EOS SEP document EOS with the tokens the model asks
        for (llama.cpp server's layout); a model with SEP but no EOS (BERT) gets a closing SEP, the
        `[CLS] query [SEP] document [SEP]` its cross-encoders were trained on.

        Raises:
            InputTooLong: a pair is longer than `n_ctx` and `truncate` is off (the document is cut).
        """
        return self.score(self.rerank_tokens(query, documents, truncate))

    def rerank_tokens(self, query: str, documents: Sequence[str], truncate: bool = False) -> list[list[int]]:
        """Each (query, document) pair as the tokens `score` reads, as `rerank` writes them.

        Raises:
            InputTooLong: a pair is longer than `n_ctx` and `truncate` is off (the document is cut).
        """
        self._check_reranker()
        with self._call():
            pairs = [self._pair(query, d) for d in documents]
        for i, p in enumerate(pairs):
            if len(p) > self.n_ctx:
                if not truncate:
                    raise InputTooLong(i, len(p), self.n_ctx)
                pairs[i] = p[: self.n_ctx]
        return pairs

    def score(self, pairs: Sequence[Sequence[int]]) -> list[float]:
        """The reranker's first output for each pair of `rerank_tokens` (each at most `n_ctx` tokens)."""
        self._check_reranker()
        rows = [list(p) for p in pairs]
        if any(not p or len(p) > self.n_ctx or min(p) < 0 or max(p) >= self.n_vocab for p in rows):
            raise BadInput(f"a pair is empty, longer than the {self.n_ctx} tokens this reranker reads, or holds "
                           "a token outside its vocabulary")
        with self._call():
            scores = self._run(rows, self.n_embd)
        return [float(s[0]) for s in scores]

    def _check_reranker(self) -> None:
        if self.kind != "rerank":
            raise EngineError(f"{self.name} is an embedding model, not a reranker (its GGUF pools "
                              f"{self.pooling}, not rank)")

    def _pair(self, query: str, document: str) -> list[int]:
        if self._rerank_template is not None:
            text = self._rerank_template.replace("{query}", query).replace("{document}", document)
            return self._tokenize(text, parse_special=True)
        v = self.vocab
        bos, sep, eos = (int(f(v)) for f in (llama_cpp.llama_vocab_bos, llama_cpp.llama_vocab_sep,
                                             llama_cpp.llama_vocab_eos))
        add_eos = llama_cpp.llama_vocab_get_add_eos(v)
        add_sep = llama_cpp.llama_vocab_get_add_sep(v) and sep >= 0
        end = eos if eos >= 0 else sep
        q, d = self._tokenize(query, False), self._tokenize(document, False)
        out = [bos] if llama_cpp.llama_vocab_get_add_bos(v) and bos >= 0 else []
        out += q + ([end] if add_eos and end >= 0 else []) + ([sep] if add_sep else []) + d
        if add_eos and end >= 0:
            out.append(end)
        elif add_sep:
            out.append(sep)
        return out

    def _run(self, inputs: list[list[int]], width: int) -> np.ndarray:
        """Pooled rows for `inputs`, each at most `n_ctx` tokens; the caller holds the lock.

        The inputs go in groups that fit the context together (as separate sequences); a group is
        one decode, or for a causal model pooled on its last token several of `n_batch` tokens, a
        sequence's vector read after the decode that held its last token."""
        out = np.zeros((len(inputs), width), dtype=np.float32)
        for group in _packed(inputs, self.n_ctx, MAX_SEQUENCES):
            if self._kv:  # a causal model's cache: each group starts from nothing
                llama_cpp.llama_memory_clear(self._kv, True)
            for seq in self._decode_group([inputs[i] for i in group]):
                ptr = llama_cpp.llama_get_embeddings_seq(self.ctx, seq)
                if not ptr:
                    raise EngineError("llama.cpp returned no pooled vector for an input")
                out[group[seq]] = np.ctypeslib.as_array(ptr, shape=(width,))
        return out

    def _decode_group(self, sequences: list[list[int]]) -> Iterator[int]:
        """Decode the sequences' tokens in order, `n_batch` at most a call; after each call, yield the
        sequences whose last token it held."""
        part: list[tuple[int, int, list[int]]] = []  # (sequence, its first position here, tokens)
        room = self.n_batch
        for s, tokens in enumerate(sequences):
            pos = 0
            while pos < len(tokens):
                take = min(room, len(tokens) - pos)
                part.append((s, pos, tokens[pos : pos + take]))
                pos += take
                room -= take
                if room == 0:
                    yield from self._decode(part, sequences)
                    part, room = [], self.n_batch
        if part:
            yield from self._decode(part, sequences)

    def _decode(self, part: list[tuple[int, int, list[int]]], sequences: list[list[int]]) -> list[int]:
        assert self.ctx is not None and self._batch is not None
        self._batch.fill(part)
        rc = int(llama_cpp.llama_decode(self.ctx, self._batch.batch))
        if rc != 0:
            raise EngineError(f"llama.cpp could not evaluate the inputs (status {rc})")
        return [s for s, pos, tokens in part if pos + len(tokens) == len(sequences[s])]


def _packed(inputs: list[list[int]], n_tokens: int, n_seqs: int) -> Iterator[list[int]]:
    """The inputs' indices in groups, in order, each of at most `n_seqs` inputs and `n_tokens` tokens."""
    group: list[int] = []
    used = 0
    for i, tokens in enumerate(inputs):
        if group and (used + len(tokens) > n_tokens or len(group) == n_seqs):
            yield group
            group, used = [], 0
        group.append(i)
        used += len(tokens)
    if group:
        yield group


class _Batch:
    """A llama_batch of up to `capacity` tokens whose arrays are numpy views, one sequence id per token."""

    def __init__(self, capacity: int):
        self.tokens = np.zeros(capacity, dtype=np.int32)
        self.pos = np.zeros(capacity, dtype=np.int32)
        self.seq = np.zeros(capacity, dtype=np.int32)
        self.n_seq_id = np.ones(capacity, dtype=np.int32)
        self.logits = np.ones(capacity, dtype=np.int8)  # every token is an output of the pooling
        base = self.seq.ctypes.data
        self.seq_ptrs = (ctypes.POINTER(ctypes.c_int32) * capacity)(
            *(ctypes.cast(base + 4 * i, ctypes.POINTER(ctypes.c_int32)) for i in range(capacity)))
        b = llama_cpp.llama_batch()
        b.token = self.tokens.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token))  # type: ignore[assignment]
        b.pos = self.pos.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_pos))  # type: ignore[assignment]
        b.n_seq_id = self.n_seq_id.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))  # type: ignore[assignment]
        b.seq_id = ctypes.cast(self.seq_ptrs, ctypes.POINTER(ctypes.POINTER(llama_cpp.llama_seq_id)))  # type: ignore[assignment]
        b.logits = self.logits.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))  # type: ignore[assignment]
        self.batch = b

    def fill(self, part: list[tuple[int, int, list[int]]]) -> None:
        """Each (sequence, first position, tokens) in turn."""
        n = 0
        for s, first, tokens in part:
            k = len(tokens)
            self.tokens[n : n + k] = tokens
            self.pos[n : n + k] = np.arange(first, first + k, dtype=np.int32)
            self.seq[n : n + k] = s
            n += k
        self.batch.n_tokens = n


def _rerank_template(model: llama_cpp.llama_model_p) -> str | None:
    t = llama_cpp.llama_model_chat_template(model, b"rerank")
    return t.decode("utf-8", errors="replace") if t else None


def _not_embedding(path: Path, header: GGUFHeader) -> str:
    arch = header.architecture
    said = "names no pooling" if pooling_of(header) is None else "pools nothing (pooling type none)"
    return (f"{path.name} is not an embedding model: its {arch} header {said}, so it gives no vector per "
            "input (a chat model writes text instead). Load an embedding or reranking GGUF, such as "
            "bundled-embed")
