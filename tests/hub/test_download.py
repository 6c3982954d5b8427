"""Downloads against the fake hub: verify, resume after a cut, reject corruption, sets, disk, progress."""

from __future__ import annotations

import errno
import sys
import threading
from pathlib import Path

import pytest

from prefill.hub import downloader, transfer
from prefill.hub.client import HubClient
from prefill.hub.downloader import download_model
from prefill.hub.errors import ChecksumMismatch, DownloadStopped, NotEnoughSpace, TransferFailed
from prefill.hub.library import ModelLibrary
from prefill.hub.paths import PARTIAL_DIR
from prefill.hub.progress import DownloadProgress
from tests.hub import disk_full, download_child
from tests.hub.conftest import FAST, add_repo, paused_download, payload, wait_until
from tests.hub.fake_hub import FakeHub

REPO = "org/Tiny-GGUF"
NAME = "tiny-Q4_K_M.gguf"
SIZE = 3_000_000


def _get(client: HubClient, models: Path, **kw: object) -> list[Path]:
    (model,) = client.list_models(REPO).models
    return download_model(client, models, REPO, model, policy=FAST, **kw)  # type: ignore[arg-type]


def _library_files(models: Path) -> list[Path]:
    return [p for p in models.rglob("*.gguf") if PARTIAL_DIR not in p.parts]


def test_download_verifies_and_places_file(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    data = payload(SIZE)
    add_repo(hub, REPO, {NAME: data})
    seen = []
    (path,) = _get(client, tmp_path, on_progress=seen.append)
    assert path == tmp_path / "org" / "Tiny-GGUF" / NAME
    assert path.read_bytes() == data
    assert not list((tmp_path / PARTIAL_DIR).iterdir())  # no .part, no sidecar left
    assert seen[-1].stage == "done" and seen[-1].done == SIZE == seen[-1].total
    assert {p.stage for p in seen} >= {"downloading", "verifying", "done"}
    # The CDN request never carries the token's header, the hub's HEAD went to the hub.
    assert [s.status for s in hub.served if s.method == "HEAD"][0] == 302


def test_cut_connection_resumes_from_kept_bytes(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    data = payload(SIZE)
    add_repo(hub, REPO, {NAME: data})
    hub.cut_after[NAME] = 1_234_567
    (path,) = _get(client, tmp_path)
    assert path.read_bytes() == data
    gets = hub.gets(NAME)
    assert sorted(str(g.range) for g in gets) == ["None", "bytes=1234567-"]
    assert hub.bytes_served(NAME) == SIZE  # not one byte fetched twice


def test_corrupt_byte_is_detected_and_removed(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, REPO, {NAME: payload(SIZE)})
    hub.corrupt[NAME] = 2_000_000
    with pytest.raises(ChecksumMismatch, match="corrupt.*removed"):
        _get(client, tmp_path)
    assert _library_files(tmp_path) == []
    assert not list((tmp_path / PARTIAL_DIR).glob("*.part"))
    assert ModelLibrary(tmp_path, hf_cache_dir=False, include_bundled=False).models() == []


def test_multi_part_model_downloads_as_a_set(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    parts = {f"big-Q8_0-{i:05d}-of-00003.gguf": payload(400_000 + i, seed=i) for i in (1, 2, 3)}
    add_repo(hub, REPO, parts)
    (model,) = client.list_models(REPO).models
    paths = download_model(client, tmp_path, REPO, model, policy=FAST)
    assert [p.name for p in paths] == sorted(parts)
    assert all(p.read_bytes() == parts[p.name] for p in paths)


def test_set_with_a_bad_part_shows_nothing(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    parts = {f"big-Q8_0-{i:05d}-of-00002.gguf": payload(300_000, seed=i) for i in (1, 2)}
    add_repo(hub, REPO, parts)
    hub.corrupt["big-Q8_0-00002-of-00002.gguf"] = 10
    (model,) = client.list_models(REPO).models
    with pytest.raises(ChecksumMismatch):
        download_model(client, tmp_path, REPO, model, policy=FAST)
    assert _library_files(tmp_path) == []  # the good first part waits in .partial


def test_pause_keeps_bytes_and_resume_finishes(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    data = payload(SIZE)
    add_repo(hub, REPO, {NAME: data})
    hub.stall_after[NAME] = 1_000_000
    stop = threading.Event()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            _get(client, tmp_path, stop=stop)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    part = lambda: sum(p.stat().st_size for p in (tmp_path / PARTIAL_DIR).glob("*.part"))  # noqa: E731
    wait_until(lambda: part() >= 1_000_000)
    stop.set()  # pause: the stalled read returns after release, then the loop stops
    hub.release()
    worker.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], DownloadStopped)
    kept = part()
    assert 1_000_000 <= kept < SIZE
    (path,) = _get(client, tmp_path)
    assert path.read_bytes() == data
    (resumed,) = [g for g in hub.gets(NAME) if g.range]  # the kept bytes are not asked for again
    assert (resumed.range, resumed.body_bytes) == (f"bytes={kept}-", SIZE - kept)


def test_not_enough_space_before_start(
    hub: FakeHub, client: HubClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_repo(hub, REPO, {NAME: payload(SIZE)})
    monkeypatch.setattr(downloader.shutil, "disk_usage", lambda _p: type("U", (), {"free": 1000})())
    with pytest.raises(NotEnoughSpace, match="not enough disk space"):
        _get(client, tmp_path)
    assert hub.gets(NAME) == []


def test_disk_full_midway_stops_cleanly(
    hub: FakeHub, client: HubClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_repo(hub, REPO, {NAME: payload(SIZE)})
    real_open = open

    class FullDisk:
        def __init__(self, f: object) -> None:
            self.f, self.written = f, 0

        def __getattr__(self, name: str) -> object:
            return getattr(self.f, name)

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()  # type: ignore[attr-defined]

        def write(self, b: object) -> int:
            if self.written > 1_000_000:
                raise OSError(errno.ENOSPC, "No space left on device")
            n = self.f.write(b)  # type: ignore[attr-defined]
            self.written += n
            return int(n)

    monkeypatch.setattr(transfer, "open", lambda *a, **k: FullDisk(real_open(*a, **k)), raising=False)
    with pytest.raises(NotEnoughSpace, match="disk .* is full"):
        _get(client, tmp_path)
    assert _library_files(tmp_path) == []


def test_set_in_a_sub_folder_is_placed(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    parts = {f"Q8_0/big-Q8_0-{i:05d}-of-00002.gguf": payload(300_000, seed=i) for i in (1, 2)}
    add_repo(hub, REPO, parts)
    (model,) = client.list_models(REPO).models
    paths = download_model(client, tmp_path, REPO, model, policy=FAST)
    assert paths == [tmp_path / "org" / "Tiny-GGUF" / name for name in sorted(parts)]
    assert all(p.read_bytes() == parts[name] for p, name in zip(paths, sorted(parts)))
    (listed,) = ModelLibrary(tmp_path, hf_cache_dir=False, include_bundled=False).models()
    assert listed.name == "org/Tiny-GGUF/Q8_0/big-Q8_0-00001-of-00002.gguf" and len(listed.parts) == 2


def test_resume_counts_kept_bytes_once(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, REPO, {NAME: payload(SIZE)})
    kept = paused_download(hub, client, tmp_path, REPO, NAME, 1_000_000)
    seen: list[DownloadProgress] = []
    _get(client, tmp_path, on_progress=seen.append)
    downloading = [p for p in seen if p.stage == "downloading"]
    assert downloading[0].done == kept  # the kept bytes, counted once, before any new one
    assert max(p.done for p in seen) == SIZE == seen[-1].done == seen[-1].total
    assert all(p.fraction is not None and p.fraction <= 1.0 for p in seen)


def test_start_over_uncounts_what_it_drops(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, REPO, {NAME: payload(SIZE)})
    paused_download(hub, client, tmp_path, REPO, NAME, 1_000_000)
    hub.ignore_range.add(NAME)  # the resume request gets the whole file: the part starts over
    seen: list[DownloadProgress] = []
    (path,) = _get(client, tmp_path, on_progress=seen.append)
    assert path.read_bytes() == payload(SIZE)
    assert max(p.done for p in seen) == SIZE == seen[-1].done
    assert all(0 <= p.done <= SIZE for p in seen)


def test_outage_mid_way_says_so_and_keeps_the_bytes(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    data = payload(SIZE)
    add_repo(hub, REPO, {NAME: data})
    hub.outage_after[NAME] = 1_200_000  # cut there, then 503 to every retry
    with pytest.raises(TransferFailed, match=r"kept failing \(HTTP 503\); 1,200,000 bytes are kept, resume it later"):
        _get(client, tmp_path)
    assert _library_files(tmp_path) == []
    hub.end_outage(NAME)
    (path,) = _get(client, tmp_path)
    assert path.read_bytes() == data
    assert hub.gets(NAME)[-1].range == "bytes=1200000-"  # the kept bytes were not fetched again


def test_real_full_disk_keeps_bytes_and_resumes() -> None:
    """A tmpfs that really fills up (ENOSPC from the kernel), in a namespace of its own."""
    result = disk_full.run_in_namespace()
    if result is None:
        pytest.skip("this machine allows no user namespace (unshare -rm), so no private tmpfs")
    assert result["exit"] == 1
    assert str(result["said"]).startswith("prefill: the disk holding ") and "is full; free some space" in str(
        result["said"])
    assert int(result["kept_bytes"]) >= disk_full.AT  # what arrived before the disk filled is kept
    assert result["resume_exit"] == 0 and result["resumed_intact"]
    assert int(result["resume_fetched"]) == disk_full.SIZE - int(result["kept_bytes"])


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_file_system_size_limit_is_said_and_bytes_kept(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    """The kernel's EFBIG (FAT32's 4 GiB limit, here a process file-size limit of 1 MB)."""
    data = payload(SIZE)
    add_repo(hub, REPO, {NAME: data})
    child = download_child.spawn(hub.url, REPO, tmp_path, max_file_size=1_000_000)
    said, _ = child.communicate(timeout=60)
    assert said.strip() == (f"FileTooLarge: the file system holding {tmp_path} cannot hold a 2.9 MiB file "
                            "(FAT32 stops at 4 GiB); choose a models folder on another drive")
    assert [p.stat().st_size for p in (tmp_path / PARTIAL_DIR).glob("*.part")] == [1_000_000]
    (path,) = _get(client, tmp_path)  # on a file system that can hold it, the download goes on
    assert path.read_bytes() == data and hub.gets(NAME)[-1].range == "bytes=1000000-"
