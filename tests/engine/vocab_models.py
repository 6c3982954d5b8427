"""Test models with real tokenizers: llama.cpp's vocabulary-only GGUFs with tiny scripted weights.

llama-cpp-python's source distribution (the one pip downloads to build it) carries llama.cpp's
`models/ggml-vocab-*.gguf`: the real tokenizers of Qwen2, Gemma 4, Llama 3, Llama (SPM),
Phi-3, Command R…, some with their model's chat template. `make vocab` (scripts/test_vocabs.py)
fetches that sdist once into a cache and unpacks only those files; `vocab_dir()` finds them.

`write_scripted()` gives such a tokenizer a llama body whose attention and feed-forward
weights are zero, so each token's embedding alone decides the next token: an output layer
that maps each token of a chosen text to its successor makes llama.cpp generate exactly
that text, through the real template and tokenizer, at any temperature.

With `after_result`, one token (the branch) has a second successor, taken once a marker token
(one only a tool's result holds) is anywhere in the context, so a model can call a tool, then
answer from its result. The residual stream stays one-hot (state k at dimension k, the marker at
dimension MARKER), and the one layer adds two things:

* attention, head 0 only: every state's query and the marker's key sit on the head's last
  dimension, whose rope pair turns slowest (10000^-0.875 ≈ 3e-4 rad a position), so the marker
  scores ~64 after the 1/sqrt(16) scale from any position and every other key 0; only the
  marker has a value, which attn_output writes to FLAG as 1. With no marker in the context
  each value is 0, so the attention adds exactly nothing.
* the feed-forward: silu(gate) * up with the gate reading FLAG (silu(8.5) ≈ 8.5) and up reading
  the branch's dimension, so it is nonzero only for the branch token after a marker; ffn_down
  writes it (~48) to BRANCHED, the dimension the output row of the second successor reads.
  After the output norm of e_branch + e_FLAG + 48 e_BRANCHED, the second successor's logit is
  ~320 and the first's ~7.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

# Our own template: ChatML turns, a thinking switch, and a generation prompt that opens <think>.
THINKING_TEMPLATE = (
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor -%}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif -%}"
)
N_EMBD = 64
LOGIT_SCALE = 40.0  # rms-normed one-hot embeddings are sqrt(N_EMBD): logits of ~320 against 0
# Residual dimensions of the branch (see the module's docstring), above the scripted states'
MARKER, FLAG, BRANCHED = N_EMBD - 1, N_EMBD - 2, N_EMBD - 3
HEAD_DIM = N_EMBD // 4
QK = 2.0  # query and key weights: (8 * QK)^2 / sqrt(HEAD_DIM) = 64, the marker's attention score
GATE = 1.5  # the flag's gate weight: rms-normed e_branch + e_FLAG is 5.66 each, and 5.66 * 1.5 = 8.5


def vocab_dir() -> Path:
    """The folder holding llama.cpp's ggml-vocab-*.gguf files of the llama-cpp-python installed, which
    `make vocab` (run by `make test` and `make test-fast`: scripts/test_vocabs.py) fetched before the run;
    a test run never downloads. Skips where that fetch found no package registry (never in CI)."""
    from importlib.metadata import version

    from scripts.test_vocabs import folder, unreachable_note

    llama_version = version("llama_cpp_python")
    out = folder(llama_version)
    if any(out.glob("ggml-vocab-*.gguf")):
        return out
    note = unreachable_note(llama_version)
    if note.exists() and not os.environ.get("CI"):
        pytest.skip(note.read_text(encoding="utf-8"))
    pytest.fail(f"llama.cpp's tokenizers for llama-cpp-python {llama_version} are not in {out}: "
                "`make vocab` fetches them (make test and make test-fast run it first)", pytrace=False)


class Vocab:
    """A vocabulary loaded by llama.cpp alone (no weights), to tokenize with the real tokenizer."""

    def __init__(self, path: Path):
        import llama_cpp

        from prefill.engine.llama.runtime import _init_backend

        _init_backend()
        mp = llama_cpp.llama_model_default_params()
        mp.vocab_only = True
        self._lib = llama_cpp
        self.model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
        assert self.model, f"llama.cpp could not read the vocabulary {path}"
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)

    def tokenize(self, text: str, special: bool = True, add_bos: bool = False) -> list[int]:
        """Tokens of `text`; `special`: markers in it become their special tokens (else plain text);
        `add_bos`: as a whole prompt is tokenized (SPM vocabularies split its end differently)."""
        data = text.encode()
        buf = (self._lib.llama_token * (len(data) + 8))()
        n = self._lib.llama_tokenize(self.vocab, data, len(data), buf, len(data) + 8, add_bos, special)
        assert n >= 0
        return list(buf[:n])

    def piece(self, token: int) -> str:
        """The text of one token, special markers written out."""
        buf = ctypes.create_string_buffer(256)
        n = self._lib.llama_token_to_piece(self.vocab, token, buf, 256, 0, True)
        assert n >= 0
        return buf.raw[:n].decode("utf-8", errors="replace")

    def token(self, text: str) -> int:
        ids = self.tokenize(text)
        assert len(ids) == 1, f"{text!r} is {len(ids)} tokens in this vocabulary"
        return ids[0]

    def close(self) -> None:
        self._lib.llama_model_free(self.model)


_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF value type -> size
_STRING, _ARRAY, _U32, _F32 = 8, 9, 4, 6
ALIGN = 32


def _skip_value(buf: bytes, pos: int, vtype: int) -> int:
    if vtype in _FIXED:
        return pos + _FIXED[vtype]
    if vtype == _STRING:
        return pos + 8 + struct.unpack_from("<Q", buf, pos)[0]
    sub, count = struct.unpack_from("<IQ", buf, pos)
    pos += 12
    if sub in _FIXED:
        return pos + _FIXED[sub] * count
    for _ in range(count):
        pos = _skip_value(buf, pos, sub)
    return pos


def _tokenizer_kvs(vocab_path: Path) -> tuple[dict[str, bytes], int]:
    """The raw bytes of each `tokenizer.*` key/value of a GGUF (key included) and of its name, and the
    vocabulary size.
    (A byte-level copy: gguf's reader takes minutes over a 262k-token vocabulary.)"""
    buf = vocab_path.read_bytes()
    assert buf[:4] == b"GGUF"
    _version, _n_tensors, n_kv = struct.unpack_from("<IQQ", buf, 4)
    pos = 24
    out: dict[str, bytes] = {}
    n_vocab = 0
    for _ in range(n_kv):
        start = pos
        n = struct.unpack_from("<Q", buf, pos)[0]
        key = buf[pos + 8 : pos + 8 + n].decode()
        pos += 8 + n
        vtype = struct.unpack_from("<I", buf, pos)[0]
        pos = _skip_value(buf, pos + 4, vtype)
        if key.startswith("tokenizer.") or key == "general.name":  # llama.cpp reads some attributes by name
            out[key] = buf[start:pos]
        if key == "tokenizer.ggml.tokens":
            n_vocab = struct.unpack_from("<Q", buf, start + 8 + n + 4 + 4)[0]
    return out, n_vocab


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    k = key.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<I", vtype) + payload


def _string(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def _write_gguf(path: Path, kvs: list[bytes], tensors: list[tuple[str, np.ndarray]]) -> None:
    """A GGUF v3 file: the key/values as given, then the tensors (F32 or F16)."""
    infos, blobs, offset = [], [], 0
    for name, a in tensors:
        ggml_type = 0 if a.dtype == np.float32 else 1
        dims = a.shape[::-1]  # GGUF lists the fastest-varying dimension first
        infos.append(_string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
                     + struct.pack("<IQ", ggml_type, offset))
        data = a.tobytes()
        blobs.append(data + b"\0" * (-len(data) % ALIGN))
        offset += len(blobs[-1])
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(infos)
    with open(path, "wb") as f:
        f.write(head + b"\0" * (-len(head) % ALIGN))
        for blob in blobs:
            f.write(blob)


def write_scripted(
    path: Path, vocab_path: Path, chain: Sequence[int], template: str | None = None, keep_template: bool = True,
    after_result: tuple[int, Sequence[int]] | None = None,
) -> Path:
    """A llama model with `vocab_path`'s tokenizer that, after token chain[0], writes chain[1:].

    `chain` is the prompt's last token, then the answer's tokens, then the end-of-turn token.
    Each token must always have the same successor. `template`: a chat template to carry
    (None: the vocabulary file's own if `keep_template`, else none). `after_result`: (marker,
    chain_after): where the marker token is in the context, the branch token chain_after[0] (a
    token of `chain`) is followed by chain_after[1:] instead (see the module's docstring).
    """
    successor: dict[int, int] = {}

    def link(seq: Sequence[int]) -> None:
        for a, b in zip(seq, seq[1:]):
            assert successor.setdefault(a, b) == b, f"token {a} is followed by both {successor[a]} and {b}"

    link(chain)
    after: Sequence[int] = ()
    if after_result is not None:
        marker, after = after_result
        assert after[0] in successor, "the branch token must be one of the script's"
        assert after[0] not in after[1:] and marker not in (*chain, *after), "the branch and the marker stand apart"
        link(after[1:])
    states = list(dict.fromkeys([*chain[:-1], *after[:-1]]))
    assert len(states) <= BRANCHED, f"a script of {len(states)} distinct tokens needs a wider model"
    tok_kvs, n_vocab = _tokenizer_kvs(vocab_path)
    own = tok_kvs.pop("tokenizer.chat_template", None)
    name = tok_kvs.pop("general.name", _kv("general.name", _STRING, _string("prefill-scripted")))
    kvs = [
        _kv("general.architecture", _STRING, _string("llama")),
        name,
        *(_kv(f"llama.{k}", _U32, struct.pack("<I", v)) for k, v in (
            ("context_length", 4096), ("embedding_length", N_EMBD), ("block_count", 1),
            ("feed_forward_length", N_EMBD), ("attention.head_count", 4), ("attention.head_count_kv", 4),
            ("rope.dimension_count", HEAD_DIM))),
        _kv("llama.attention.layer_norm_rms_epsilon", _F32, struct.pack("<f", 1e-5)),
        _kv("general.file_type", _U32, struct.pack("<I", 1)),
        *tok_kvs.values(),
    ]
    if template is not None:
        kvs.append(_kv("tokenizer.chat_template", _STRING, _string(template)))
    elif keep_template and own is not None:
        kvs.append(own)
    embd = np.zeros((n_vocab, N_EMBD), dtype=np.float16)
    out = np.zeros((n_vocab, N_EMBD), dtype=np.float16)
    for k, tok in enumerate(states):
        embd[tok, k] = 1.0
        out[successor[tok], k] = LOGIT_SCALE
    layer = {n: np.zeros((N_EMBD, N_EMBD), dtype=np.float16)  # [out, in], as every weight here
             for n in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}
    if after_result is not None:
        # Head 0's last dimension: the slowest rope pair both in llama.cpp's normal and NeoX layouts
        embd[marker, MARKER] = 1.0
        layer["attn_q"][HEAD_DIM - 1, : len(states)] = QK
        layer["attn_k"][HEAD_DIM - 1, MARKER] = QK
        layer["attn_v"][0, MARKER] = 1 / 8  # the rms-normed marker is 8 e_MARKER: a value of 1
        layer["attn_output"][FLAG, 0] = 1.0
        layer["ffn_gate"][0, FLAG] = GATE
        layer["ffn_up"][0, states.index(after[0])] = 1.0
        layer["ffn_down"][BRANCHED, 0] = 1.0
        out[after[1], BRANCHED] = LOGIT_SCALE
    ones = np.ones(N_EMBD, dtype=np.float32)
    tensors: list[tuple[str, np.ndarray]] = [
        ("token_embd.weight", embd), ("output_norm.weight", ones), ("output.weight", out),
        ("blk.0.attn_norm.weight", ones), ("blk.0.ffn_norm.weight", ones)]
    tensors += [(f"blk.0.{n}.weight", w) for n, w in layer.items()]
    _write_gguf(path, kvs, tensors)
    return path


def chain_for(vocab: Vocab, prompt_end: str, answer: str, end: str) -> list[int]:
    """[last prompt token, answer tokens…, end token] as the real tokenizer splits them."""
    return [vocab.tokenize(prompt_end)[-1], *vocab.tokenize(answer), vocab.token(end)]



def write_thinker(path: Path, thinking: str = "Two and two make four.", answer: str = "The answer: 4!") -> Path:
    """A reasoning model (Qwen2's tokenizer, THINKING_TEMPLATE) that thinks `thinking`, then answers `answer`."""
    vocabs = vocab_dir()
    v = Vocab(vocabs / "ggml-vocab-qwen2.gguf")
    try:
        chain = [v.tokenize("assistant\n<think>\n")[-1], *v.tokenize(f"{thinking}</think>{answer}"),
                 v.token("<|im_end|>")]
    finally:
        v.close()
    return write_scripted(path, vocabs / "ggml-vocab-qwen2.gguf", chain, THINKING_TEMPLATE)


# Our own template for a model that calls tools: ChatML, the tools listed in a system turn, earlier calls
# written back as <tool_call> blocks and results as tool turns.
TOOLS_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nYou may call these tools:\n"
    "{% for t in tools %}{{ t.function | tojson }}\n{% endfor %}<|im_end|>\n{% endif -%}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}<|im_end|>\n"
    "{% endfor -%}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}"
)
# The call, cut into tokens that each appear once, so each has one successor in the script
CALL_PIECES = ("<", "tool", "_call", '>{"', "name", '":"', "weather", '","', "arguments", '":{"', "city", '":', '"',
               "Os", "lo", '"}}', "</", "t", "ool", "_c", "all", ">")


def _call_chain(v: Vocab, name: tuple[str, ...], key: tuple[str, ...] = ("city",)) -> list[int]:
    """The generation prompt's last token, the pieces of weather(city="Oslo") named `name` (its argument
    named by the pieces of `key`), <|im_end|>."""
    i = CALL_PIECES.index("weather")
    pieces = (*CALL_PIECES[:i], *name, *CALL_PIECES[i + 1 :])
    j = pieces.index("city")
    pieces = (*pieces[:j], *key, *pieces[j + 1 :])
    return [v.tokenize("<|im_start|>assistant\n")[-1], *(v.token(p) for p in pieces), v.token("<|im_end|>")]


def write_caller(path: Path, name: tuple[str, ...] = ("weather",)) -> Path:
    """A model (Qwen2's tokenizer, TOOLS_TEMPLATE) that answers every turn with one call:
    weather(city="Oslo") (the function named by the pieces of `name`, e.g. ("forecast", "__", "weather")
    as an MCP hub names it), written in the Hermes form."""
    vocabs = vocab_dir()
    v = Vocab(vocabs / "ggml-vocab-qwen2.gguf")
    try:
        chain = _call_chain(v, name)
    finally:
        v.close()
    return write_scripted(path, vocabs / "ggml-vocab-qwen2.gguf", chain, TOOLS_TEMPLATE)


def write_round_tripper(path: Path, name: tuple[str, ...] = ("weather",), marker: str = "Sunny",
                        answer: str = "It is sunny in Oslo.", key: tuple[str, ...] = ("city",)) -> Path:
    """`write_caller`'s model, except that once a tool's result holding `marker` ("Sunny, 21 °C") is in
    the conversation, it answers `answer` in plain text instead of calling, so a tool round trip ends
    by itself. A result without the marker gets the call again. The marker's last token is the one
    attended to ("unny" of "S", "unny"; " sunny" is another token), so the rest of the prompt must
    not hold it."""
    vocabs = vocab_dir()
    v = Vocab(vocabs / "ggml-vocab-qwen2.gguf")
    try:
        chain = _call_chain(v, name, key)
        after = [chain[0], *v.tokenize(answer, special=False), chain[-1]]
        shared = set(after[1:-1]) & set(chain)
        assert not shared, f"{answer!r} shares tokens with the call: {shared}"
        mark = v.tokenize(marker, special=False)[-1]
    finally:
        v.close()
    return write_scripted(path, vocabs / "ggml-vocab-qwen2.gguf", chain, TOOLS_TEMPLATE, after_result=(mark, after))
