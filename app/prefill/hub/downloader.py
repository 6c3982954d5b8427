"""Download one model (a file or a multi-part set) into the library, verified.

The steps, in order: check every name, ask the hub for each part's size and hash,
lock each part's partial (another download of the same file, in this process or
another, is turned away with `DownloadBusy`), check free disk space for what is
still missing, fetch each part into `<models>/.partial/` (keeping bytes from
earlier runs), check each part's SHA-256, and only when every part is good move
them all into `<models>/<owner>/<repo>/` (sub-folders of the repository made as
needed). A model is therefore never listed half-written. A vision model's
projector (`ModelFiles.projector`) is one more file of the same download: fetched,
resumed and verified the same way, into the same folder, placed with the model.

A Qt worker drives `download_model` directly: a `threading.Event` to stop (pause or
cancel) and a progress callback; `DownloadManager` drives it the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from prefill.hub.client import HubClient
from prefill.hub.errors import (
    ChecksumMismatch,
    DownloadBusy,
    DownloadError,
    NotEnoughSpace,
    RemoteFileChanged,
)
from prefill.hub.partial import Expected, PartialFile
from prefill.hub.paths import inside, repo_dir
from prefill.hub.progress import DownloadProgress, SpeedMeter
from prefill.hub.quants import ModelFiles
from prefill.hub.transfer import RetryPolicy, transfer

SPACE_MARGIN = 64 << 20  # leave this much free: a full disk breaks more than the download
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def destination(models_dir: Path, repo_id: str, filename: str) -> Path:
    """Where a repository's file lands in the library (the name checked; no folder made)."""
    return inside(repo_dir(models_dir, repo_id), filename)


def _placed(dest: Path, size: int | None) -> bool:
    return size is not None and dest.is_file() and dest.stat().st_size == size


def download_model(
    client: HubClient,
    models_dir: Path,
    repo_id: str,
    model: ModelFiles,
    stop: threading.Event | None = None,
    on_progress: Callable[[DownloadProgress], None] | None = None,
    revision: str | None = None,
    policy: RetryPolicy = RetryPolicy(),
) -> list[Path]:
    """Download, verify and place every part of `model` (and its projector); return the final
    paths, the model's parts first (`[0]` is the one to load), its projector last.

    Bytes left by an earlier attempt (paused, dropped, killed) are kept when the hub
    still serves the same file. Parts already in the library are not fetched again.

    Raises:
        DownloadStopped: `stop` was set; the partial bytes stay for a resume.
        DownloadBusy: another download holds one of the parts; nothing was touched.
        ChecksumMismatch: a part's bytes were wrong; that part was deleted.
        NotEnoughSpace: not enough free space, before the start or mid-way.
        TransferFailed, HubError: the hub could not be reached or refused.
    """
    stop = stop or threading.Event()
    report = on_progress or (lambda _p: None)
    dests = [destination(models_dir, repo_id, p.filename) for p in model.files]
    with ExitStack() as held:
        todo: list[tuple[PartialFile, Path, str]] = []
        for remote, dest in zip(model.files, dests):
            if _placed(dest, remote.size):
                continue  # already in the library (verified when it was placed)
            meta = client.file_meta(repo_id, remote.filename, revision)
            size = remote.size if remote.size is not None else meta.size
            if remote.size is not None and meta.size is not None and meta.size != remote.size:
                raise RemoteFileChanged(f"{remote.filename} changed on the hub while it was being listed; list again")
            sha = remote.sha256 or (meta.etag if meta.etag and _SHA256.match(meta.etag) else None)
            expected = Expected(repo_id, remote.filename, size, sha, meta.etag, meta.commit)
            part = held.enter_context(PartialFile(models_dir, expected).claimed())  # DownloadBusy
            if not _placed(dest, size):  # another download may have placed it meanwhile
                todo.append((part, dest, meta.url))

        meter = SpeedMeter(model.download_size, report)
        meter.kept(sum(d.stat().st_size for d in dests if d.is_file()))
        kept = [p.prepare() for p, _, _ in todo]
        meter.kept(sum(kept))
        meter.emit()  # the bytes already on disk, shown before the first new one arrives
        _check_space(models_dir, sum((p.expected.size or 0) - k for (p, _, _), k in zip(todo, kept)))

        for part, _dest, first_url in todo:
            meter.set_stage("downloading", part.expected.filename)
            try:
                digest = transfer(part, _locator(client, repo_id, part, first_url, revision), stop, meter.add,
                                  policy, meter.tick)
            except DownloadError:
                meter.emit()  # what is on disk as it stops (a pause shows its bytes, not the last throttled count)
                raise
            meter.set_stage("verifying")
            _verify(part, digest)
        for part, dest, _ in todo:
            _place(models_dir, part, dest)
    meter.set_stage("done")
    return dests


def discard_partial(client: HubClient, models_dir: Path, repo_id: str, model: ModelFiles) -> list[str]:
    """Forget a download: remove its `.part` files (after a cancel). Needs no network.

    A part another download holds at this moment (the same file, fetched by another
    window or `prefill get`) is left to it; the names of those are returned.
    """
    del client  # same signature as download_model, so a caller can swap one for the other
    left: list[str] = []
    for remote in model.files:
        part = PartialFile(models_dir, Expected(repo_id, remote.filename, remote.size, remote.sha256))
        try:
            with part.claimed():
                part.discard()
        except DownloadBusy:
            left.append(remote.filename)
    return left


def _locator(
    client: HubClient, repo_id: str, part: PartialFile, first_url: str, revision: str | None
) -> Callable[[], tuple[str, dict[str, str]]]:
    """First the URL the HEAD gave; after a failure, a fresh one (signed CDN URLs expire)."""
    urls = [first_url]

    def locate() -> tuple[str, dict[str, str]]:
        url = urls.pop() if urls else client.file_meta(repo_id, part.expected.filename, revision).url
        return url, client.auth_headers(url)

    return locate


def _place(models_dir: Path, part: PartialFile, dest: Path) -> None:
    """Move a verified part into the library, making its sub-folder (`Q8_0/…`) first."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        inside(repo_dir(models_dir, part.expected.repo_id), part.expected.filename)  # no symlink crept in
        os.replace(part.path, dest)
    except OSError as e:
        raise DownloadError(
            f"{part.expected.filename} was downloaded and verified but cannot be placed at {dest} "
            f"({e.strerror or e}); its bytes are kept in {part.path.parent}"
        ) from None
    part.discard()  # the sidecar


def _verify(part: PartialFile, digest: str) -> None:
    exp = part.expected
    if exp.size is not None and part.size_on_disk() != exp.size:
        part.discard()
        raise DownloadError(f"{exp.filename} has the wrong size after download; it was removed")
    if exp.sha256 and digest != exp.sha256.lower():
        part.discard()
        raise ChecksumMismatch(exp.filename, exp.sha256.lower(), digest)


def _check_space(models_dir: Path, needed: int) -> None:
    if needed <= 0:
        return
    free = shutil.disk_usage(models_dir).free
    if free < needed + SPACE_MARGIN:
        raise NotEnoughSpace(str(models_dir), needed, free)
