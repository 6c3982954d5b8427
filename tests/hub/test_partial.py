"""Partial files: unambiguous names, one download per file across processes, abandoned ones."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from prefill.hub.abandoned import abandoned_downloads
from prefill.hub.client import HubClient
from prefill.hub.downloader import discard_partial, download_model
from prefill.hub.errors import DownloadBusy, NoSuchModel
from prefill.hub.file_lock import FileLock
from prefill.hub.library import ModelLibrary
from prefill.hub.partial import Expected, PartialFile
from prefill.hub.paths import PARTIAL_DIR
from tests.hub import download_child
from tests.hub.conftest import FAST, add_repo, paused_download, payload, wait_until
from tests.hub.fake_hub import FakeHub

NAME = "tiny-Q4_0.gguf"
SIZE = 3_000_000
WEEK = 7 * 24 * 3600


def _part(models: Path, repo_id: str, filename: str = NAME) -> PartialFile:
    return PartialFile(models, Expected(repo_id, filename, None, None))


def _age(paths: list[Path], seconds: float) -> None:
    when = time.time() - seconds
    for p in paths:
        os.utime(p, (when, when))


# --- names ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b"),
    [(("a__b/c", NAME), ("a/b__c", NAME)), (("o/r", "x__y.gguf"), ("o/r", "x/y.gguf")),
     (("o/r__Q4", "m.gguf"), ("o/r", "Q4/m.gguf"))],
)
def test_partial_names_never_collide(tmp_path: Path, a: tuple[str, str], b: tuple[str, str]) -> None:
    pa, pb = _part(tmp_path, *a), _part(tmp_path, *b)
    assert pa.path != pb.path and pa.sidecar != pb.sidecar and pa.lock.path != pb.lock.path


def test_partial_name_is_bounded_and_readable(tmp_path: Path) -> None:
    long = "Q4_K_M/" + "m" * 240 + ".gguf"
    p = _part(tmp_path, "o" * 96 + "/" + "r" * 96, long)
    assert len(p.lock.path.name.encode()) <= 255 and p.path.name.startswith("mmmm")


def test_lookalike_repo_keeps_the_others_bytes(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    """`a__b/c` paused with bytes kept; downloading the same file name from `a/b__c` leaves them."""
    add_repo(hub, "a__b/c", {NAME: payload(SIZE, seed=1)})
    add_repo(hub, "a/b__c", {NAME: payload(SIZE, seed=2)})
    first = _part(tmp_path, "a__b/c")
    kept = paused_download(hub, client, tmp_path, "a__b/c", NAME, 1_000_000)
    assert kept >= 1_000_000 and first.size_on_disk() == kept
    (other,) = client.list_models("a/b__c").models
    (path,) = download_model(client, tmp_path, "a/b__c", other, policy=FAST)
    assert path.read_bytes() == payload(SIZE, seed=2)
    assert first.size_on_disk() == kept  # the look-alike's download did not take its bytes


def test_part_under_the_old_flat_name_is_resumed(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    data = payload(SIZE)
    add_repo(hub, "org/Tiny-GGUF", {NAME: data})
    legacy = tmp_path / PARTIAL_DIR / f"org__Tiny-GGUF__{NAME}.part"
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(data[:1_000_000])
    (model,) = client.list_models("org/Tiny-GGUF").models
    sidecar = {"version": 1, "repo_id": "org/Tiny-GGUF", "filename": NAME, "size": SIZE,
               "sha256": model.first.sha256, "etag": None, "commit": None}
    legacy.with_name(legacy.name + ".json").write_text(json.dumps(sidecar))
    (path,) = download_model(client, tmp_path, "org/Tiny-GGUF", model, policy=FAST)
    assert path.read_bytes() == data
    assert hub.gets(NAME)[-1].range == "bytes=1000000-" and not legacy.exists()


# --- one download per file -----------------------------------------------------------------
def test_file_lock_excludes_within_a_process(tmp_path: Path) -> None:
    a, b = FileLock(tmp_path / "x.lock"), FileLock(tmp_path / "x.lock")
    assert a.acquire() and not b.acquire()
    assert b.holder() == os.getpid()
    a.release()
    assert b.acquire()
    b.release()
    assert not (tmp_path / "x.lock").exists()


def test_second_process_is_turned_away_then_resumes_after_a_kill(
    hub: FakeHub, client: HubClient, tmp_path: Path
) -> None:
    data = payload(SIZE, seed=4)
    add_repo(hub, "org/Tiny-GGUF", {NAME: data})
    hub.stall_after[NAME] = 1_000_000
    part = _part(tmp_path, "org/Tiny-GGUF")
    child = download_child.spawn(hub.url, "org/Tiny-GGUF", tmp_path)
    try:
        wait_until(lambda: part.size_on_disk() >= 1_000_000 or child.poll() is not None, timeout=30)
        assert child.poll() is None, "the first download ended early"
        (model,) = client.list_models("org/Tiny-GGUF").models
        with pytest.raises(DownloadBusy, match=rf"{NAME} is already being downloaded by process {child.pid}"):
            download_model(client, tmp_path, "org/Tiny-GGUF", model, policy=FAST)
        assert discard_partial(client, tmp_path, "org/Tiny-GGUF", model) == [NAME]  # a cancel here leaves it
        assert part.size_on_disk() == 1_000_000  # nothing written by the second one
        assert hub.gets(NAME) == []  # nor asked for (the first one's GET is still open: logged when it ends)
        child.send_signal(signal.SIGKILL)  # the holder dies: the system lets go of its lock
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    hub.release()
    wait_until(lambda: len(hub.gets(NAME)) == 1)  # the dead child's GET ends
    (path,) = download_model(client, tmp_path, "org/Tiny-GGUF", model, policy=FAST)
    assert path.read_bytes() == data
    assert hub.gets(NAME)[-1].range == "bytes=1000000-"


def test_two_processes_one_file_one_finishes(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    data = payload(SIZE, seed=5)
    add_repo(hub, "org/Tiny-GGUF", {NAME: data})
    hub.stall_after[NAME] = 1_000_000
    part = _part(tmp_path, "org/Tiny-GGUF")
    first = download_child.spawn(hub.url, "org/Tiny-GGUF", tmp_path)
    try:
        wait_until(lambda: part.size_on_disk() >= 1_000_000 or first.poll() is not None, timeout=30)
        second = download_child.spawn(hub.url, "org/Tiny-GGUF", tmp_path)
        said, _ = second.communicate(timeout=30)
        hub.release()
        done, _ = first.communicate(timeout=30)
    finally:
        for p in (first,):
            if p.poll() is None:
                p.kill()
    assert said.strip() == f"DownloadBusy: {NAME} is already being downloaded by process {first.pid}; " \
                           "let that download finish (or stop it) and try again"
    assert done.strip() == "done"
    assert (tmp_path / "org" / "Tiny-GGUF" / NAME).read_bytes() == data
    assert hub.bytes_served(NAME) == SIZE


# --- abandoned partials --------------------------------------------------------------------
def _abandon(models: Path, repo_id: str, filename: str, data: bytes, total: int, age: float) -> PartialFile:
    part = PartialFile(models, Expected(repo_id, filename, total, None))
    part.prepare()
    part.path.write_bytes(data)
    _age([part.path, part.sidecar], age)
    return part


def test_abandoned_partials_listed_and_removed(tmp_path: Path) -> None:
    old = _abandon(tmp_path, "org/Old-GGUF", "Q8_0/old-Q8_0.gguf", b"x" * 5000, 9000, WEEK + 60)
    _abandon(tmp_path, "org/New-GGUF", "new-Q4_0.gguf", b"y" * 100, 900, WEEK - 3600)  # paused yesterday
    stray = tmp_path / PARTIAL_DIR / "import-mine.gguf.part"  # an import cut short: no sidecar
    stray.write_bytes(b"z" * 10)
    _age([stray], 30 * 24 * 3600)
    library = ModelLibrary(tmp_path, hf_cache_dir=False, include_bundled=False)
    found = library.abandoned()
    assert [(a.name, a.size, a.total) for a in found] == [
        ("import-mine.gguf.part", 10, None), ("org/Old-GGUF/Q8_0/old-Q8_0.gguf", 5000, 9000)]
    with old.claimed():  # a download took it up: not abandoned, not removable
        assert [a.name for a in library.abandoned()] == ["import-mine.gguf.part"]
        with pytest.raises(NoSuchModel):
            library.remove_abandoned("org/Old-GGUF/Q8_0/old-Q8_0.gguf")
    removed = library.remove_abandoned("org/Old-GGUF/Q8_0/old-Q8_0.gguf")
    assert removed.size == 5000 and not old.path.exists() and not old.sidecar.exists()
    assert [a.name for a in abandoned_downloads(tmp_path)] == ["import-mine.gguf.part"]
    assert len(list((tmp_path / PARTIAL_DIR).glob("*new-Q4_0*.part"))) == 1  # the recent one stays
