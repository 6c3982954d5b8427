"""What llama.cpp would abort on, checked before it sees a model file.

llama.cpp turns most faults in a GGUF header into an error it returns, but a few
values reach a `GGML_ASSERT` (or a C++ exception thrown where nothing catches it)
and the process dies, the window with it. `read_model_header` reads the header
with its vocabulary and refuses those values with a `GGUFError` that names them.
Each check cites the llama.cpp code it stands in front of (the llama.cpp that
llama-cpp-python 0.3.36 vendors, src/); a value llama.cpp rejects cleanly on its own is left to llama.cpp.
What one architecture's own code asserts on (head sizes, sliding-window layers, state-space
sizes) is checked by `gguf_arch_guard`, called from here.

Why checks and not a load in a child process: a probe process would double the
cost of every load (a second llama.cpp start and vocabulary build), would only
see the faults that abort while loading (the missing byte tokens abort later,
when a user types an unusual character), and would turn a named fault into
"it crashed". The header holds everything these checks need.
"""

from __future__ import annotations

from pathlib import Path

from prefill.engine.gguf.arch_guard import check_arch_shapes
from prefill.engine.gguf.header import GGUFError, GGUFHeader, read_header, split_paths

GGUF_UINT16 = 2
MAX_LAYERS = 512  # LLAMA_MAX_LAYERS, llama-hparams.h
MAX_EXPERTS = 1024  # LLAMA_MAX_EXPERTS, llama-hparams.h
ROPE_SCALING_TYPES = ("none", "linear", "yarn", "longrope")  # LLAMA_ROPE_SCALING_TYPES, llama-model.cpp
NO_TOKENIZER = ("no_vocab", "none")
SPM = "llama"  # tokenizer.ggml.model of a SentencePiece vocabulary
WPM = "bert"  # and of a WordPiece one
BYTE_TOKEN = 6  # LLAMA_TOKEN_TYPE_BYTE


def read_model_header(path: str | Path) -> GGUFHeader:
    """Read a local model's header, vocabulary included, and refuse what llama.cpp would abort on.

    Raises:
        GGUFError: the file is unreadable, not GGUF, or holds a value llama.cpp asserts on.
    """
    header = read_header(path, keep_tokens=True)
    check_loadable(header)
    _check_split_parts(Path(path), header)
    header.tokens = header.token_types = None  # megabytes for a large vocabulary, needed only here
    return header


def check_loadable(h: GGUFHeader) -> None:
    """Raise `GGUFError` for a header value that would make llama.cpp abort the process."""
    _check_layers(h)
    check_arch_shapes(h)  # head sizes, sliding-window layers, state-space sizes, per architecture
    _check_experts(h)
    _check_rope(h)
    _check_epsilons(h)
    _check_vocabulary(h)


def _count(h: GGUFHeader, name: str) -> int | None:
    """`{arch}.name` when it is a whole number; None when absent or of another type
    (llama.cpp reads these with a strict type and throws, cleanly, on any other)."""
    v = h.arch_value(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _refuse(what: str) -> GGUFError:
    return GGUFError(f"the model file is malformed: {what}; llama.cpp would abort on it")


def _check_layers(h: GGUFHeader) -> None:
    # llama_model_base::load_hparams: GGML_ASSERT(n_layer_all > 0 && n_layer_all <= LLAMA_MAX_LAYERS)
    n_layer = _count(h, "block_count")
    if n_layer is None:
        return
    if not 0 < n_layer <= MAX_LAYERS:
        raise _refuse(f"{h.architecture}.block_count is {n_layer} (1 to {MAX_LAYERS} layers)")
    # GGML_ASSERT(n_layer_nextn <= n_layer_all)
    nextn = _count(h, "nextn_predict_layers")
    if nextn is not None and nextn > n_layer:
        raise _refuse(f"{nextn} next-token prediction layers in a {n_layer}-layer model")


def _check_experts(h: GGUFHeader) -> None:
    # load_hparams, after "models may route a different number of experts per layer"
    n_expert = _count(h, "expert_count") or 0
    used = h.arch_value("expert_used_count", 0)
    per_layer = used if isinstance(used, list) else [used]
    if not all(isinstance(u, int) and not isinstance(u, bool) for u in per_layer):
        return  # llama.cpp throws on the type
    used_max = max(per_layer, default=0)
    groups = _count(h, "expert_group_count") or 0
    group_used = _count(h, "expert_group_used_count") or 0
    if h.architecture in ("hunyuan_vl", "hunyuan-dense") and n_expert <= 1:
        n_expert = used_max = 0  # llama.cpp clears them for these two
    if n_expert > MAX_EXPERTS:
        raise _refuse(f"{n_expert} experts (llama.cpp supports {MAX_EXPERTS})")
    if used_max > n_expert:
        raise _refuse(f"{used_max} experts used per token of {n_expert}")
    if n_expert == 0:
        if groups:
            raise _refuse(f"{groups} expert groups in a model without experts")
        return
    if used_max == 0:
        raise _refuse(f"{n_expert} experts, none used per token")
    if groups >= n_expert:
        raise _refuse(f"{groups} expert groups for {n_expert} experts")
    if groups > 1 and (n_expert % groups or not 0 < group_used < groups):
        raise _refuse(f"{n_expert} experts in {groups} groups, {group_used} groups used")


def _check_rope(h: GGUFHeader) -> None:
    # GGML_ASSERT(rope_scaling_type_train != LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED)
    kind = h.arch_value("rope.scaling.type")
    if isinstance(kind, str) and kind not in ROPE_SCALING_TYPES:
        raise _refuse(f"unknown RoPE scaling type {kind[:40]!r}")


def _check_epsilons(h: GGUFHeader) -> None:
    # ggml-cpu ops.cpp (norm, rms_norm, l2_norm): GGML_ASSERT(eps >= 0.0f), on the first decode
    for key, v in h.metadata.items():
        if key.endswith(("_epsilon", ".eps")):
            for x in v if isinstance(v, list) else [v]:
                if isinstance(x, float) and not x >= 0.0:  # NaN too
                    raise _refuse(f"{key} is {x}, where a norm's epsilon must be 0 or more")


def _check_vocabulary(h: GGUFHeader) -> None:
    model = h.metadata.get("tokenizer.ggml.model")
    if isinstance(model, str) and model in NO_TOKENIZER:
        # llama_vocab::impl::tokenize: GGML_ASSERT(tokenizer && ...), then GGML_ABORT for LLAMA_VOCAB_TYPE_NONE
        raise GGUFError(
            f"the model has no tokenizer (tokenizer.ggml.model is {model!r}): it cannot read text, "
            "so it cannot chat"
        )
    tokens = h.tokens
    if tokens is None:
        return  # missing, or not a list of strings: llama.cpp throws
    if not tokens:
        raise _refuse("its vocabulary is empty")
    # llama_vocab::impl::load reads each token as a C string (up to its first NUL), names an empty one
    # "[EMPTY_<id>]", then GGML_ASSERT(id_to_token.size() == token_to_id.size()): no two alike.
    names = tokens
    seen = set(names)
    if b"" in seen or b"\0" in b"".join(tokens):  # rare: spell them as llama.cpp will
        names = [t.split(b"\0", 1)[0] or b"[EMPTY_%d]" % i for i, t in enumerate(tokens)]
        seen = set(names)
    if len(seen) != len(names):
        first: dict[bytes, int] = {}
        for i, name in enumerate(names):
            if first.setdefault(name, i) != i:
                text = name.decode("utf-8", errors="replace")[:40]
                raise _refuse(f"its vocabulary holds the token {text!r} twice (ids {first[name]} and {i})")
    if model == WPM and h.token_types is not None and BYTE_TOKEN in h.token_types:
        # llama_vocab::impl::token_to_byte: GGML_ABORT for a WordPiece vocabulary, reached while
        # llama.cpp caches every token's text at load
        raise _refuse(f"its WordPiece vocabulary types token {h.token_types.index(BYTE_TOKEN)} as a byte")
    if model == SPM:
        # llm_tokenizer_spm_session::resegment spells an unknown character as byte tokens through
        # llama_vocab::byte_to_token, whose token_to_id.at() throws inside llama_tokenize: std::terminate.
        missing = [b for b in range(256) if b"<0x%02X>" % b not in seen and (b == 0 or bytes([b]) not in seen)]
        if missing:
            raise _refuse(
                f"its SentencePiece vocabulary lacks {len(missing)} of the 256 byte tokens "
                f"(<0x{missing[0]:02X}> first), needed to spell any character it has no token for"
            )


def _check_split_parts(path: Path, h: GGUFHeader) -> None:
    """llama_model_loader reads `split.no` of every further part with gguf_get_val_u16, which
    asserts on any type but uint16 (a wrong count or name is an error llama.cpp returns)."""
    for part in split_paths(path, h)[1:]:
        if not part.exists():
            continue  # llama.cpp says so itself
        types = read_header(part).types
        if "split.no" in types and types["split.no"] != GGUF_UINT16:
            raise _refuse(f"part {part.name} gives its number as GGUF type {types['split.no']}, not uint16")
