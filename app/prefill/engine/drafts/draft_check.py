"""A draft model's door, shared by the chat engine (engine/local/draft_model.py) and the server's
slots (engine/batch/slot_draft_model.py): load the file beside the main model, with its offload
settings, and refuse it in words unless its token ids mean what the main model's mean.

Drafts are token ids, so a draft model must share the main model's tokenizer: `vocab_mismatch`
checks it as llama.cpp's `common_speculative_are_compatible` does (same kind of tokenizer, same BOS
and EOS handling, vocabulary sizes within 128, the same text for every token from id 5 up to the
smaller size) and says what differs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from prefill.engine.errors import DraftModelError, ModelLoadError
from prefill.engine.gguf.guard import read_model_header
from prefill.engine.gguf.model_kind import check_chat_model
from prefill.engine.llama.kv_sizes import kv_bytes_per_cell
from prefill.engine.llama.offload import resolve_gpu_layers
from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.settings import LoadSettings

P_MIN = 0.75  # llama.cpp's long-standing default for --draft-p-min
VOCAB_SIZE_SLACK = 128  # llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE: padding rows some conversions add
VOCAB_CHECK_FROM = 5  # llama.cpp's SPEC_VOCAB_CHECK_START_TOKEN_ID: the first ids are often special, renamed
_TOKENIZER_KINDS = {0: "none", 1: "SentencePiece", 2: "byte-level BPE", 3: "WordPiece", 4: "Unigram",
                    5: "RWKV", 6: "PLaMo-2"}

R = TypeVar("R", bound=LlamaRuntime)
# Builds the draft's runtime: (file, settings, GPU layers, the model's layer count).
MakeRuntime = Callable[[Path, LoadSettings, int, int], R]


def vocab_mismatch(main: LlamaRuntime, draft: LlamaRuntime) -> str:
    """Why `draft`'s token ids do not mean what `main`'s mean, in words; "" when they do."""
    if main.vocab_type != draft.vocab_type:
        kind = _TOKENIZER_KINDS.get
        return (f"its tokenizer is {kind(draft.vocab_type, 'of another kind')}, the main model's is "
                f"{kind(main.vocab_type, 'of another kind')}")
    if main.add_bos != draft.add_bos or (main.add_bos and main.bos_id != draft.bos_id):
        return "it starts a text with another beginning-of-text token than the main model"
    if main.add_eos != draft.add_eos or (main.add_eos and main.eos_id != draft.eos_id):
        return "it ends a text with another end-of-text token than the main model"
    if abs(main.n_vocab - draft.n_vocab) > VOCAB_SIZE_SLACK:
        return (f"its vocabulary has {draft.n_vocab} tokens and the main model's {main.n_vocab}: "
                "they do not share a tokenizer")
    for t in range(VOCAB_CHECK_FROM, min(main.n_vocab, draft.n_vocab)):
        ours, theirs = main.token_text(t), draft.token_text(t)
        if ours != theirs:
            return (f"token {t} is {theirs!r} in its vocabulary and {ours!r} in the main model's: "
                    "they do not share a tokenizer")
    return ""


def load_draft(path: Path, main: LlamaRuntime, settings: LoadSettings, make: MakeRuntime[R]) -> tuple[R, int]:
    """Load `path` with `settings` (the main model's, its context and offload) through `make`, and
    check that it can draft for `main`. Returns the runtime and its KV bytes per cell.

    Raises:
        DraftModelError: the file is missing or not a model llama.cpp loads (in the main loader's
            words), or its vocabulary is not the main model's, or its cache cannot drop a draft.
    """
    try:
        header = read_model_header(path)
        check_chat_model(header, path.name)
        layers = resolve_gpu_layers(settings.n_gpu_layers, header, settings)
        runtime = make(path, settings, layers, header.n_layer)
    except ModelLoadError as e:
        raise DraftModelError(f"the draft model {path.name} could not be loaded: {e}") from e
    why = vocab_mismatch(main, runtime)
    if not why and runtime.recurrent:
        why = "its cache (recurrent or hybrid memory) cannot drop a rejected draft"
    if why:
        runtime.close()
        raise DraftModelError(f"{path.name} cannot draft for this model: {why}. A draft model must come "
                              "from the main model's family, with the same tokenizer")
    return runtime, kv_bytes_per_cell(header, settings.kv_type, settings.kv_type)
