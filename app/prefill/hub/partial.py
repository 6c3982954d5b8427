"""Downloads in progress on disk: `<models>/.partial/<file>.<key>.part`, a JSON sidecar, a lock.

The sidecar records what the bytes are meant to become (repository, file, size,
SHA-256, etag, commit), so a later run (after a pause, a dropped connection, or a
killed app) keeps the bytes when the hub still serves the same file, and starts
over when it does not. The lock (`.part.lock`) keeps two downloads of one file,
in one process or two, from writing the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from prefill.hub.errors import DownloadBusy
from prefill.hub.file_lock import FileLock
from prefill.hub.paths import PARTIAL_DIR, check_repo_id, safe_relpath

_VERSION = 1
PART_SUFFIX = ".part"
SIDECAR_SUFFIX = ".part.json"
LOCK_SUFFIX = ".part.lock"
_KEY_HEX = 20  # 80 bits of SHA-256: two files never share a name in practice
_READABLE = 100  # characters of the file's own name kept in the partial's name


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
        check_repo_id(expected.repo_id)
        folder = models_dir / PARTIAL_DIR
        stem = partial_stem(expected.repo_id, rel)
        self.expected = expected
        self.path = folder / f"{stem}{PART_SUFFIX}"
        self.sidecar = folder / f"{stem}{SIDECAR_SUFFIX}"
        self.lock = FileLock(folder / f"{stem}{LOCK_SUFFIX}")
        owner, name = expected.repo_id.split("/")
        self._legacy = folder / f"{'__'.join((owner, name, *rel.parts))}{PART_SUFFIX}"

    @contextmanager
    def claimed(self) -> Iterator[PartialFile]:
        """Hold the part's lock for the block; only its holder may touch the bytes.

        Raises:
            DownloadBusy: another download (here or in another process) holds it.
        """
        if not self.lock.acquire():
            raise DownloadBusy(self.expected.filename, self.lock.holder())
        try:
            yield self
        finally:
            self.lock.release()

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
        self._adopt_legacy()
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

    def hash_prefix(self, hasher: hashlib._Hash, until: int) -> None:
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
        # Identity is the content (the hash when the hub gives one, else etag and size),
        # and the name, so even two files whose keys collided would never share bytes.
        keys = ("repo_id", "filename", *(("sha256", "size") if mine["sha256"] else ("etag", "size")))
        return all(saved.get(k) == mine[k] for k in keys)

    def _adopt_legacy(self) -> None:
        """Take over a part saved under the old flat name (`owner__repo__file.part`).

        That name was ambiguous (`a__b/c` and `a/b__c` shared it); its sidecar says
        which file the bytes belong to, so only a part of this very file is taken.
        """
        legacy_sidecar = self._legacy.with_name(self._legacy.name + ".json")
        try:
            if self.path.exists() or not self._legacy.exists():
                return
            saved = json.loads(legacy_sidecar.read_text())
        except (OSError, ValueError):
            return
        if isinstance(saved, dict) and (saved.get("repo_id"), saved.get("filename")) == (
            self.expected.repo_id, self.expected.filename
        ):
            os.replace(self._legacy, self.path)
            os.replace(legacy_sidecar, self.sidecar)

    def _write_sidecar(self) -> None:
        data = {"version": _VERSION, **asdict(self.expected)}
        tmp = self.sidecar.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.sidecar)


def partial_stem(repo_id: str, rel: PurePosixPath) -> str:
    """The partial's name for one file of one repository: readable, bounded, unambiguous.

    The file's own name (cut to 100 characters) for a person, then a key hashed from
    the repository and the whole path, so `a__b/c` and `a/b__c`, or `x__y.gguf` and
    `x/y.gguf`, never share a partial. Neither part may hold a newline (checked).
    """
    key = hashlib.sha256(f"{repo_id}\n{rel.as_posix()}".encode()).hexdigest()[:_KEY_HEX]
    return f"{rel.name[:_READABLE]}.{key}"
