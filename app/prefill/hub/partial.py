"""Downloads in progress on disk: `<models>/.partial/<name>.part` and its JSON sidecar.

The sidecar records what the bytes are meant to become (size, SHA-256, etag,
commit), so a later run (after a pause, a dropped connection, or a killed app)
keeps the bytes when the hub still serves the same file, and starts over when it
does not.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from prefill.hub.paths import PARTIAL_DIR, check_repo_id, safe_relpath

_VERSION = 1


@dataclass(frozen=True)
class Expected:
    """What a finished file must be, as the hub describes it."""

    repo_id: str
    filename: str
    size: int | None
    sha256: str | None
    etag: str | None = None
    commit: str | None = None


class PartialFile:
    """The `.part` file and sidecar for one remote file.

    Args:
        models_dir: the library folder.
        expected: the file it will become.
    """

    def __init__(self, models_dir: Path, expected: Expected):
        rel = safe_relpath(expected.filename)
        owner, name = check_repo_id(expected.repo_id).split("/")
        flat = "__".join((owner, name, *rel.parts))  # one flat, unambiguous name per file
        folder = models_dir / PARTIAL_DIR
        self.expected = expected
        self.path = folder / f"{flat}.part"
        self.sidecar = folder / f"{flat}.part.json"

    def size_on_disk(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def prepare(self) -> int:
        """Keep the bytes on disk if they belong to the expected file; return how many.

        A part whose sidecar is missing or describes another version of the file, or
        that is longer than the file, is discarded.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and not self._same_file():
            self.discard()
        have = self.size_on_disk()
        if self.expected.size is not None and have > self.expected.size:
            self.discard()
            have = 0
        self._write_sidecar()
        if not self.path.exists():
            self.path.touch()
        return have

    def hash_prefix(self, hasher: hashlib._Hash, until: int) -> None:  # type: ignore[name-defined]
        """Feed the first `until` bytes already on disk to `hasher`."""
        left = until
        with open(self.path, "rb") as f:
            while left > 0:
                chunk = f.read(min(left, 1 << 22))
                if not chunk:
                    break
                hasher.update(chunk)
                left -= len(chunk)

    def discard(self) -> None:
        """Remove the part and its sidecar (cancel, corrupt, or the file changed)."""
        for p in (self.path, self.sidecar):
            try:
                p.unlink()
            except FileNotFoundError:
                pass

    def _same_file(self) -> bool:
        try:
            saved = json.loads(self.sidecar.read_text())
        except (OSError, ValueError):
            return False
        if not isinstance(saved, dict) or saved.get("version") != _VERSION:
            return False
        mine = asdict(self.expected)
        # Identity is the content: the hash when the hub gives one, else etag and size.
        keys = ("sha256", "size") if mine["sha256"] else ("etag", "size")
        return all(saved.get(k) == mine[k] for k in keys)

    def _write_sidecar(self) -> None:
        data = {"version": _VERSION, **asdict(self.expected)}
        tmp = self.sidecar.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.sidecar)
