"""Where models live, and checks that untrusted names stay inside that folder.

File names come from the hub (a repository's listing) and repository names from
the user: both are untrusted. Everything that turns one into a path goes through
`safe_relpath` / `repo_dir`, so a name like `../../.bashrc` never leaves the
models folder.
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
import unicodedata
from pathlib import Path, PurePosixPath

from platformdirs import user_data_dir

from prefill.hub.errors import ModelsDirUnusable, UnsafeFileName

PARTIAL_DIR = ".partial"  # downloads in progress: never listed as models
IMPORTED_DIR = "local"  # models imported from elsewhere on this machine
_REPO_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_FORBIDDEN_CHARS = set('\\:*?"<>|')
_MAX_NAME = 255
# Names Windows keeps for devices, with any extension (`nul.gguf` opens the NUL device).
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{dev}{n}" for dev in ("COM", "LPT") for n in "0123456789\u00b9\u00b2\u00b3"}
)
# Bidirectional overrides make a name read differently from what it is (`gguf.exe`).
_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def default_models_dir() -> Path:
    """The default models folder: the platform's user data folder for Prefill, then `models`."""
    return Path(user_data_dir("prefill", appauthor=False)) / "models"


def check_models_dir(path: Path, create: bool = True) -> Path:
    """Make sure `path` can hold the model library and return it.

    With `create`, the folder is made (with its parents) when missing and a file is written in it and
    removed; without, nothing is written: the folder, or the nearest folder above it that exists, must
    be a folder this process may write in (a quick check while a person types a path).

    Raises:
        ModelsDirUnusable: It cannot be created, is not a folder, or cannot be written in, in words.
    """
    path = path.expanduser()
    if not path.is_absolute():
        raise ModelsDirUnusable(path, "give the whole path, from the top of the disk")
    if not create:
        existing = next((p for p in (path, *path.parents) if p.exists()), None)
        if existing is not None and not existing.is_dir():
            raise ModelsDirUnusable(path, f"{existing} is a file, not a folder")
        if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
            raise ModelsDirUnusable(path, f"this account may not write in {existing}")
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ModelsDirUnusable(path, "it is a file, not a folder") from None
    except OSError as e:
        raise ModelsDirUnusable(path, f"it cannot be created there: {_os_words(e)}") from None
    if not path.is_dir():
        raise ModelsDirUnusable(path, "it is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=path, prefix=".prefill-check-"):
            pass
    except OSError as e:
        raise ModelsDirUnusable(path, f"nothing can be written in it: {_os_words(e)}") from None
    return path


def _os_words(e: OSError) -> str:
    """What the system said, as a person reads it."""
    words = {errno.ENOENT: "the system keeps that place for itself (no folder can be made in it)",
             errno.EACCES: "this account may not write there", errno.EPERM: "this account may not write there",
             errno.EROFS: "the disk there is read-only", errno.ENOSPC: "the disk is full",
             errno.ENOTDIR: "a part of the path is a file, not a folder"}
    return words.get(e.errno or 0, e.strerror or str(e))


def check_repo_id(repo_id: str) -> str:
    """Return `repo_id` if it is a plain `owner/name`, else raise `UnsafeFileName`."""
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(_REPO_PART.match(p) and ".." not in p for p in parts):
        raise UnsafeFileName(repo_id, "a repository is named owner/name with letters, digits, . _ -")
    if any(p.endswith(".") or is_windows_reserved(p) for p in parts):
        raise UnsafeFileName(repo_id, "a part ends with a dot or is a name Windows keeps for a device")
    return repo_id


def is_windows_reserved(part: str) -> bool:
    """Whether Windows would open a device for this name (`CON`, `nul.gguf`, `COM1.tar.gz`)."""
    return part.split(".")[0].rstrip(" ").upper() in _WINDOWS_RESERVED


def safe_relpath(name: str) -> PurePosixPath:
    """Check a file name from the hub and return it as a relative POSIX path.

    Sub-folders (`Q4_K_M/model-00001-of-00002.gguf`) are allowed; anything absolute,
    climbing (`..`), with backslashes, drive letters, control or bidirectional
    characters, empty parts, parts ending in a dot or a space, or a device name of
    Windows (`CON`, `nul.gguf`, `COM1`, `LPT1`) is refused, on every system, so a
    library can move between them.

    Raises:
        UnsafeFileName: the name could escape the folder it is placed in.
    """
    if not name or len(name) > 1024:
        raise UnsafeFileName(name, "empty or too long")
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in name):
        raise UnsafeFileName(name, "it holds control characters")
    if _BIDI_CONTROLS.intersection(name):
        raise UnsafeFileName(name, "it holds characters that reverse the text's direction")
    bad = _FORBIDDEN_CHARS.intersection(name)
    if bad:
        raise UnsafeFileName(name, f"it holds {''.join(sorted(bad))!r}")
    if name.startswith("/") or name.startswith("~"):
        raise UnsafeFileName(name, "it is an absolute path")
    parts = name.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise UnsafeFileName(name, "it has an empty, '.' or '..' part")
        if len(part.encode()) > _MAX_NAME:
            raise UnsafeFileName(name, "a part is longer than a file name may be")
        if part != part.strip() or part.endswith("."):
            raise UnsafeFileName(name, "a part starts or ends with a space, or ends with a dot")
        if is_windows_reserved(part):
            raise UnsafeFileName(name, f"{part!r} is a name Windows keeps for a device")
    return PurePosixPath(*parts)


def inside(root: Path, rel: str | PurePosixPath) -> Path:
    """Join a checked relative name under `root` and prove the result stays inside it.

    Raises:
        UnsafeFileName: the name, or a symlink on its way, leads outside `root`.
    """
    relpath = safe_relpath(str(rel))
    target = root.joinpath(*relpath.parts)
    real_root = root.resolve()
    real_parent = target.parent.resolve()
    if real_parent != real_root and real_root not in real_parent.parents:
        raise UnsafeFileName(str(rel), "it resolves outside the models folder")
    return target


def repo_dir(models_dir: Path, repo_id: str) -> Path:
    """The folder a repository's downloads go to: `<models>/<owner>/<name>`."""
    owner, name = check_repo_id(repo_id).split("/")
    return models_dir / owner / name
