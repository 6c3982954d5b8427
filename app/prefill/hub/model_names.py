"""A model's name as a person reads it, from its file, repository and header names.

A GGUF's ``general.name`` is often the training run's ("Smollm2 135M 8k Lc100K Mix1 Ep2"), a
file name carries the quantisation and a repository name the packager's suffix ("-GGUF").
The repository name, where known, says best what the model is; the file name says which
quantisation of it this file is. Both are untrusted text: shown as plain text, never parsed
for more than these words.
"""

from __future__ import annotations

import re
from pathlib import PurePath

# A quantisation as llama.cpp names its file types (Q4_K_M, IQ3_XXS, Q8_0, TQ1_0, F16, BF16),
# standing alone between separators; unsloth's dynamic ones carry a "UD-" before it.
_QUANT = re.compile(
    r"(?:^|[-_.\s])(?P<q>(?:UD-)?(?:I?T?Q\d(?:_[A-Z0-9]{1,3}){0,2}|BF16|F16|FP16|F32|MXFP4(?:_MOE)?))(?=$|[-_.\s])",
    re.IGNORECASE,
)
# What a packager adds to a repository's name: it says how the model is packed, not what it is.
_PACKING = re.compile(r"[-_.\s]*(?:GGUF|GGML)$", re.IGNORECASE)
# A model size (135M, 7B, 8x7B, 1.5B, 270m): shown in capitals, as model cards write them.
_SIZE = re.compile(r"^(?:\d+x)?\d+(?:\.\d+)?[bmkt]$", re.IGNORECASE)
# File stems that name nothing: the header's name says more.
_GENERIC = re.compile(r"^(?:ggml[-_]?)?model(?:[-_.]?(?:f16|f32|\d+))?$|^ggml$|^unsloth$", re.IGNORECASE)
# Multi-part files: "-00001-of-00003".
_PART = re.compile(r"-\d{5}-of-\d{5}$")
# The Hugging Face cache keeps a repository as "models--owner--name".
_HF_CACHE = re.compile(r"^models--(?P<owner>[^-].*?)--(?P<name>.+)$")
SEP = " · "


def quantization(file_name: str) -> str:
    """The quantisation named in a file name ("Q4_K_M"), in capitals; "" when it names none."""
    stem = _PART.sub("", _stem(file_name))
    found = list(_QUANT.finditer(stem))
    return found[-1].group("q").upper() if found else ""


def repository_of(path: str | PurePath) -> str:
    """The repository a model file was downloaded from, as "owner/name", read from where it lies:
    the Hugging Face cache's "models--owner--name" folder, or an "owner/name" pair of folders whose
    name says it holds GGUF files (as Prefill's models folder and most packagers name them). ""
    when the folders do not say."""
    parts = PurePath(path).parts[:-1]
    for part in reversed(parts):
        m = _HF_CACHE.match(part)
        if m:
            return f"{m['owner']}/{m['name']}"
    if len(parts) >= 2 and _PACKING.search(parts[-1]):
        return f"{parts[-2]}/{parts[-1]}"
    return ""


def display_name(file_name: str, repository: str = "", general_name: str = "") -> str:
    """What a person reads for a model: "SmolLM2 135M Instruct · Q8_0".

    Args:
        file_name: the file's name or path (its quantisation, and the name when no repository is known).
        repository: "owner/name" or "name" on the hub, when known: the name is taken from it, and
            whatever the header's name adds (training-run tags) is dropped.
        general_name: the header's ``general.name``: the name when neither of the others names one.
    """
    quant = quantization(file_name)
    # A repository of one quantisation names it ("gemma-3-4b-it-qat-q4_0-gguf"): the file says it too.
    name = _words(_QUANT.sub("", _PACKING.sub("", repository.rsplit("/", 1)[-1]))) if repository else ""
    if not name:
        stem = _PART.sub("", _stem(file_name))
        if quant:  # the quantisation and what follows it (an "-imat" tag) are not the name
            cut = [m for m in _QUANT.finditer(stem)][-1]
            stem = stem[: cut.start()]
        stem = _PACKING.sub("", stem)
        if stem and not _GENERIC.match(stem):
            name = _words(stem)
    if not name:
        name = " ".join(general_name.split()) or _words(_stem(file_name)) or "model"
    return f"{name}{SEP}{quant}" if quant and quant.lower() not in name.lower() else name


def model_display_name(path: str | PurePath, general_name: str = "") -> str:
    """`display_name` of a file on disk, with the repository read from its folders."""
    return display_name(PurePath(path).name, repository_of(path), general_name)


def _stem(file_name: str) -> str:
    name = PurePath(file_name).name
    return name[: -len(".gguf")] if name.lower().endswith(".gguf") else name


def _words(text: str) -> str:
    """Separators to spaces, sizes in capitals, the rest as written (a version's dots stay)."""
    words = [w for w in re.split(r"[-_\s]+", text.strip(" ._-")) if w]
    return " ".join(w[:-1] + w[-1].upper() if _SIZE.match(w) else w for w in words)
