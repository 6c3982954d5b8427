"""GGUF files of a repository as models: quantisation names and multi-part sets.

A repository lists files; a person picks models. `group_models` turns the listing
into `ModelFiles`: one per single file, one per complete `-0000k-of-0000n` set,
each with its quantisation (from the name) and its total size. A vision model's
projector (an `mmproj` GGUF in the same folder, chosen by the engine's rule in
`engine/gguf/projector_files.py`) rides on the model it goes with, so choosing a
model chooses its projector too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from prefill.engine.gguf.projector_files import best_projector, is_projector_name

_QUANT = re.compile(
    r"(?<![A-Za-z0-9])("
    r"IQ\d_(?:XXS|XS|NL|S|M)|Q\d_K(?:_(?:XL|S|M|L))?|Q\d_\d|TQ\d_\d|BF16|F16|F32|MXFP4"
    r")(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"^(?P<base>.+)-(?P<index>\d{5})-of-(?P<total>\d{5})\.gguf$", re.IGNORECASE)
UNKNOWN_QUANT = "other"


@dataclass(frozen=True)
class RemoteFile:
    """One file of a repository, as the hub lists it."""

    filename: str
    size: int | None
    sha256: str | None  # from the hub's LFS metadata; None for small non-LFS files


@dataclass(frozen=True)
class ModelFiles:
    """A model as a person sees it: one GGUF file or a complete multi-part set.

    Attributes:
        name: display name (the file name, or the set's name without `-0000k-of-0000n`).
        quant: quantisation read from the name (`Q4_K_M`, `IQ3_XS`, `F16`…) or `other`.
        parts: the files, in order; `parts[0]` is the one llama.cpp opens.
        complete: False when some parts of a set are missing from the listing.
        projector: a vision model's projector (mmproj) from the same folder, downloaded with
            it; None for a text model, and on a projector itself.
    """

    name: str
    quant: str
    parts: tuple[RemoteFile, ...]
    complete: bool = True
    projector: RemoteFile | None = None

    @property
    def size(self) -> int | None:
        """Total bytes of all parts, None when the hub did not give every size."""
        sizes = [p.size for p in self.parts]
        return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)

    @property
    def first(self) -> RemoteFile:
        return self.parts[0]

    @property
    def is_projector(self) -> bool:
        """A vision projector (`mmproj-…`), not a model to chat with on its own."""
        return is_projector_name(self.name)

    @property
    def files(self) -> tuple[RemoteFile, ...]:
        """Everything a download of this model fetches: its parts, then its projector."""
        return self.parts + ((self.projector,) if self.projector is not None else ())

    @property
    def download_size(self) -> int | None:
        """Bytes of `files`, None when the hub did not give every size."""
        sizes = [f.size for f in self.files]
        return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)

    def with_projector(self, projector: RemoteFile | None) -> ModelFiles:
        """The same model with another projector (one the user named), or none (text only)."""
        return replace(self, projector=projector)


def quant_of(filename: str) -> str:
    """The quantisation named in a file name (case-normalised), or `other`."""
    found = _QUANT.findall(filename)
    return found[-1].upper() if found else UNKNOWN_QUANT


def split_part(filename: str) -> tuple[str, int, int] | None:
    """`(base, index, total)` for `base-0000k-of-0000n.gguf`, None for a single file."""
    m = _SPLIT.match(filename)
    if not m:
        return None
    index, total = int(m["index"]), int(m["total"])
    if not 1 <= index <= total:
        return None
    return m["base"], index, total


def group_models(files: Iterable[RemoteFile]) -> list[ModelFiles]:
    """Turn a repository listing into models: GGUF files only, sets joined, sorted by name."""
    singles: list[ModelFiles] = []
    sets: dict[tuple[str, int], dict[int, RemoteFile]] = {}
    for f in files:
        if not f.filename.lower().endswith(".gguf"):
            continue
        part = split_part(f.filename)
        if part is None:
            singles.append(ModelFiles(_display(f.filename), quant_of(f.filename), (f,)))
        else:
            base, index, total = part
            sets.setdefault((base, total), {})[index] = f
    for (base, total), found in sets.items():
        ordered = tuple(found[i] for i in sorted(found))
        name = _display(base) + ".gguf"
        singles.append(ModelFiles(name, quant_of(base), ordered, complete=len(found) == total))
    return sorted(_pair_projectors(singles), key=lambda m: m.name.lower())


def projectors_of(models: Iterable[ModelFiles]) -> list[RemoteFile]:
    """The projector files among a listing's models (single files: a projector is never split)."""
    return [m.first for m in models if m.is_projector]


def _pair_projectors(models: list[ModelFiles]) -> list[ModelFiles]:
    """Give each model the projector of its folder that the engine would pick beside it."""
    by_folder: dict[str, dict[str, RemoteFile]] = {}
    for f in projectors_of(models):
        by_folder.setdefault(_folder(f.filename), {})[_display(f.filename)] = f
    out = []
    for m in models:
        candidates = by_folder.get(_folder(m.first.filename), {})
        best = None if m.is_projector else best_projector(_display(m.first.filename), candidates)
        out.append(m.with_projector(candidates[best]) if best is not None else m)
    return out


def _folder(filename: str) -> str:
    return filename.rsplit("/", 1)[0] if "/" in filename else ""


def group_by_quant(models: Iterable[ModelFiles]) -> dict[str, list[ModelFiles]]:
    """Models keyed by quantisation, in a stable order (as they came)."""
    out: dict[str, list[ModelFiles]] = {}
    for m in models:
        out.setdefault(m.quant, []).append(m)
    return out


def _display(filename: str) -> str:
    return filename.rsplit("/", 1)[-1] if "/" in filename else filename
