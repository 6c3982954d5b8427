"""Downloads left unfinished in `<models>/.partial/` long ago: found, sized, removed.

A paused or failed download keeps its bytes so it can resume; one nobody resumed
for a week is probably forgotten, and may hold gigabytes. These are listed (by
`prefill ls --partial` and the Models page) with their size, and removed on
request. A partial that a download holds right now (its lock is taken) is never
listed nor removed, whatever its age.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prefill.hub.errors import DownloadBusy, NoSuchModel
from prefill.hub.file_lock import FileLock
from prefill.hub.partial import LOCK_SUFFIX, PART_SUFFIX, SIDECAR_SUFFIX
from prefill.hub.paths import PARTIAL_DIR

ABANDONED_AFTER = timedelta(days=7)


@dataclass(frozen=True)
class AbandonedDownload:
    """An unfinished download nobody touched for a while.

    Attributes:
        name: `owner/repo/file` as its sidecar says, else the partial's own file name.
        path: the `.part` file.
        size: bytes on disk.
        total: bytes of the finished file, None when unknown.
        last_written: when its bytes or sidecar last changed (UTC).
    """

    name: str
    path: Path
    size: int
    total: int | None
    last_written: datetime

    @property
    def files(self) -> tuple[Path, Path, Path]:
        """The part, its sidecar and its lock file: what removing it deletes."""
        stem = self.path.name.removesuffix(PART_SUFFIX)
        return self.path, self.path.with_name(stem + SIDECAR_SUFFIX), self.path.with_name(stem + LOCK_SUFFIX)


def abandoned_downloads(
    models_dir: Path, older_than: timedelta = ABANDONED_AFTER, now: float | None = None
) -> list[AbandonedDownload]:
    """Partials in `models_dir` last written more than `older_than` ago and not in use, by name."""
    folder = models_dir / PARTIAL_DIR
    if not folder.is_dir():
        return []
    cutoff = (time.time() if now is None else now) - older_than.total_seconds()
    found = []
    for part in sorted(folder.glob(f"*{PART_SUFFIX}")):
        item = _describe(part)
        if item is None or item.last_written.timestamp() > cutoff:
            continue
        if _in_use(item):
            continue
        found.append(item)
    return sorted(found, key=lambda a: a.name)


def remove_abandoned(models_dir: Path, name: str, older_than: timedelta = ABANDONED_AFTER) -> AbandonedDownload:
    """Delete one abandoned download's files (named as `abandoned_downloads` names it).

    Raises:
        NoSuchModel: no abandoned download has that name.
        DownloadBusy: a download took it up meanwhile; it was left alone.
    """
    for item in abandoned_downloads(models_dir, older_than):
        if name in (item.name, item.path.name):
            part, sidecar, lock_path = item.files
            lock = FileLock(lock_path)
            if not lock.acquire():
                raise DownloadBusy(item.name, lock.holder())
            try:
                now = _describe(part)
                if now is not None and now.last_written != item.last_written:
                    raise DownloadBusy(item.name, None)  # a download wrote to it meanwhile
                for p in (part, sidecar):
                    p.unlink(missing_ok=True)
            finally:
                lock.release()
            return item
    raise NoSuchModel(f"no unfinished download called {name!r} (see `prefill ls --partial`)")


def _describe(part: Path) -> AbandonedDownload | None:
    try:
        st = part.stat()
    except OSError:
        return None  # removed meanwhile
    sidecar = part.with_name(part.name.removesuffix(PART_SUFFIX) + SIDECAR_SUFFIX)
    name, total, written = part.name, None, st.st_mtime
    try:
        saved = json.loads(sidecar.read_text())
        written = max(written, sidecar.stat().st_mtime)
    except (OSError, ValueError):
        saved = None  # no sidecar (an interrupted import, or torn): named by its file
    if isinstance(saved, dict) and isinstance(saved.get("repo_id"), str) and isinstance(saved.get("filename"), str):
        name = f"{saved['repo_id']}/{saved['filename']}"
        total = saved["size"] if isinstance(saved.get("size"), int) else None
    when = datetime.fromtimestamp(written, tz=UTC)
    return AbandonedDownload(name, part, st.st_size, total, when)


def _in_use(item: AbandonedDownload) -> bool:
    lock = FileLock(item.files[2])
    if not lock.acquire():
        return True
    lock.release()
    return False
