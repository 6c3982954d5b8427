"""Which files are vision projectors (mmproj GGUFs), and which one belongs to a model.

One rule for every place that pairs them: the engine's "the mmproj beside the model" when a chat is
started (`find_projector`), a hub repository's listing (`best_projector` over its file names) and the
local library. It reads names only (no file is opened), so the hub and the CLI can use it without
loading llama.cpp.

A vision repository keeps its projectors beside the model's quantisations, named `mmproj-*.gguf`
(sometimes `*-mmproj-*.gguf` or `*mmproj*.gguf`), often in more than one precision. The one for a model
is the one whose name shares the most with the model's; among equals the model's own precision (a
shared part already), then f16 (what llama.cpp's converter writes by default and the precision the
projector was trained in, at half the bytes of f32), bf16, q8_0, f32, then the shortest name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

# Projector precisions, best first: f16 is what llama.cpp's converter writes by default.
PRECISIONS = ("F16", "BF16", "Q8_0", "F32")
_PRECISION = re.compile(r"(?<![a-z0-9])(bf16|f16|f32|q8_0)(?![a-z0-9])", re.IGNORECASE)


def is_projector_name(name: str) -> bool:
    """Whether a file name (a path's last part is read) names a vision projector GGUF."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return base.endswith(".gguf") and "mmproj" in base


def projector_precision(name: str) -> str:
    """The precision a projector's name says (`F16`, `BF16`, `Q8_0`, `F32`), or "" when it says none."""
    found = _PRECISION.findall(name.rsplit("/", 1)[-1])
    return found[-1].upper() if found else ""


def best_projector(model_name: str, candidates: Iterable[str]) -> str | None:
    """The projector (among `candidates`, names of one folder) that goes with `model_name`; None when
    no candidate is a projector."""
    names = sorted(c for c in candidates if is_projector_name(c))
    if not names:
        return None
    stem = _stem(model_name)

    def shared(name: str) -> int:
        own = _stem(name).replace("mmproj", " ").replace("_", "-").replace(" ", "-").split("-")
        return sum(1 for part in own if part.strip(".") and part in stem)

    def rank(name: str) -> tuple[int, int, int]:
        p = projector_precision(name)
        return (-shared(name), PRECISIONS.index(p) if p in PRECISIONS else len(PRECISIONS), len(name))

    return min(names, key=rank)


def find_projector(model: Path) -> Path | None:
    """The mmproj file beside a model on disk (in its folder), chosen by `best_projector`; None when
    there is none."""
    try:
        found = {p.name: p for p in model.parent.glob("*.gguf")
                 if is_projector_name(p.name) and p != model and p.is_file()}
    except OSError:
        return None
    best = best_projector(model.name, found)
    return found[best] if best is not None else None


def _stem(name: str) -> str:
    base = name.rsplit("/", 1)[-1].lower()
    return base[: -len(".gguf")] if base.endswith(".gguf") else base
