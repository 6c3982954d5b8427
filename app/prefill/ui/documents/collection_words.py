"""What the collections dialog says: a collection's size, its embedding model, the folders it watches, a
file's line, and why a name cannot name a new collection. Counts as people read them ("1.2K passages"),
sizes as the rest of the window writes them ("22.8 KiB")."""

from __future__ import annotations

import re
from pathlib import Path

from prefill.documents.index import CollectionSummary, FileRecord
from prefill.engine.units import format_bytes, short_count
from prefill.session.document_chats import OWN_PREFIX

# The bundled model's converted file (engine/embed/bundled.py `cached_name`): its title, then its source's size in
# hex and the converter's version (matched here, so the window does not import the converter to read a name).
_BUNDLED = re.compile(r"(?P<title>.+)\.[0-9a-f]+\.c\d+\.f16\.gguf")


def plural(n: int, word: str) -> str:
    """ "1 file", "14 files", "1.2K passages"."""
    return f"{short_count(n)} {word}{'' if n == 1 else 's'}"


def size_line(c: CollectionSummary) -> str:
    """ "14 files (1 not readable) · 1.2K passages · 22.8 KiB"."""
    unread = f" ({short_count(c.failed)} not readable)" if c.failed else ""
    return f"{plural(c.files, 'file')}{unread} · {plural(c.chunks, 'passage')} · {format_bytes(c.bytes)}"


def model_words(model_id: str) -> str:
    """An embedding model as a person reads it: the bundled one by its name, another by its file's name;
    "none yet" before anything was indexed."""
    if not model_id:
        return "none yet"
    bundled = _BUNDLED.fullmatch(model_id)
    if bundled is not None:
        return f"{bundled['title']} (bundled)"
    return model_id


def model_line(c: CollectionSummary) -> str:
    """ "Embedding model: all-MiniLM-L6-v2 (bundled) · 384 numbers a passage"."""
    numbers = f" · {c.n_embd} numbers a passage" if c.n_embd else ""
    return f"Embedding model: {model_words(c.model_id)}{numbers}"


def folders_words(roots: tuple[str, ...]) -> str:
    """A card's short line for what it watches: the first folder's name, and how many more."""
    if not roots:
        return "Not watched"
    more = f" and {len(roots) - 1} more" if len(roots) > 1 else ""
    return f"{Path(roots[0]).name or roots[0]}{more}"


def watched_line(roots: tuple[str, ...]) -> str:
    """The files and folders a collection was made from, as watched."""
    if not roots:
        return "Not watched: made before Prefill kept its folders (add a folder to it to watch it)."
    names = ", ".join(roots[:3]) + (f" and {len(roots) - 3} more" if len(roots) > 3 else "")
    return f"Watched: {names} (changes are indexed while Prefill runs)"


def file_parts(f: FileRecord) -> tuple[str, str]:
    """A file's name, and what it gave (pages and passages) or, not read, why in the reader's words."""
    name = Path(f.path).name
    if f.state == "failed":  # the reader's sentence names the file first: not twice
        problem = f.problem[len(name) + 1:].strip() if f.problem.startswith(f"{name}:") else f.problem
        return name, f"not read: {problem}"
    pages = f"{plural(f.pages, 'page')}, " if f.pages else ""
    note = f" ({f.problem})" if f.problem else ""
    return name, f"{pages}{plural(f.chunks, 'passage')}{note}"


def file_line(f: FileRecord) -> str:
    """A file's row as one line: "notes.md — 4 passages", "scan.txt — not read: holds NUL bytes…"."""
    name, what = file_parts(f)
    return f"{name} — {what}"


def check_name(name: str, taken: set[str]) -> str:
    """Why `name` cannot name a new collection ("" when it can)."""
    if not name.strip():
        return "A collection needs a name."
    if name.startswith(OWN_PREFIX):
        return f"Names starting with {OWN_PREFIX} are kept for a chat's own documents: pick another."
    if name in taken:
        return f"There is a collection named {name} already: pick it in the list, or another name."
    return ""


def free_name(wanted: str, taken: set[str]) -> str:
    """`wanted`, or "wanted 2", "wanted 3"… where that is taken (a new collection named after its folder)."""
    base = wanted.strip() or "Documents"
    if base.startswith(OWN_PREFIX):
        base = base[len(OWN_PREFIX):].strip() or "Documents"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base} {n}"
    return name
