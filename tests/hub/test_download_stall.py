"""A download whose server goes silent mid-file: its progress says what is on disk, and Pause is prompt.

The fake hub holds the connection at `stall(...)` for 30 s (until `release()`); the transfer's read
timeout is 10 s here. Before the watch beside the read, progress froze at the last throttled report
(often the bytes kept from before, "0%") and a pause waited for the read timeout.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from prefill.hub.client import HubClient
from prefill.hub.downloader import download_model
from prefill.hub.errors import DownloadStopped
from prefill.hub.manager import DownloadEvent, DownloadManager, JobState
from prefill.hub.partial import Expected, PartialFile
from prefill.hub.progress import DownloadProgress
from tests.hub.conftest import FAST, add_repo, paused_download, payload, wait_until
from tests.hub.fake_hub import FakeHub

REPO = "org/Stall-GGUF"
NAME = "stall-Q4_K_M.gguf"
SIZE = 6_000_000
KEPT_AT = 1_000_000  # paused here first: bytes on disk from an earlier run
STALL_AT = 3_000_000  # the resumed transfer goes silent here
PAUSE_BOUND_S = 3.0  # the stall holds 30 s, the read timeout 10 s: this fails without the watch


def test_progress_counts_the_bytes_on_disk_while_the_server_is_silent(
        hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    data = payload(SIZE, 7)
    add_repo(hub, REPO, {NAME: data})
    kept = paused_download(hub, client, tmp_path, REPO, NAME, KEPT_AT)
    assert kept >= KEPT_AT
    part = PartialFile(tmp_path, Expected(REPO, NAME, None, None))
    hub.stall(NAME, STALL_AT)
    (model,) = client.list_models(REPO).models
    seen: list[DownloadProgress] = []
    stop = threading.Event()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            download_model(client, tmp_path, REPO, model, stop, seen.append, policy=FAST)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        wait_until(lambda: bool(seen))
        assert seen[0].done == kept  # the kept bytes are counted before any new one arrives
        wait_until(lambda: part.size_on_disk() >= STALL_AT)
        # While silent: reports keep coming, with every byte on disk and the time without one growing.
        wait_until(lambda: bool(seen) and seen[-1].done == part.size_on_disk() and seen[-1].idle >= 1.0, 5)
        last = seen[-1]
        assert last.done == STALL_AT and last.total == SIZE and last.stage == "downloading"
        assert last.fraction is not None and last.fraction == STALL_AT / SIZE  # 50%, not 0%
        # Pause while the server is silent: the read returns at once, the bytes stay.
        t = time.monotonic()
        stop.set()
        worker.join(PAUSE_BOUND_S + 5)
        took = time.monotonic() - t
        assert len(outcome) == 1 and isinstance(outcome[0], DownloadStopped), outcome
        assert took <= PAUSE_BOUND_S, f"pause took {took:.1f} s"
        assert part.size_on_disk() == STALL_AT
    finally:
        stop.set()
        hub.release()
        worker.join(40)
    (path,) = download_model(client, tmp_path, REPO, model, policy=FAST)  # resumes from what was kept
    assert path.read_bytes() == data


def test_the_queue_pauses_a_silent_download_within_a_second_or_so(
        hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, REPO, {NAME: payload(SIZE, 8)})
    (model,) = client.list_models(REPO).models
    hub.stall(NAME, STALL_AT)
    events: list[DownloadEvent] = []
    m = DownloadManager(client, tmp_path, on_event=events.append, policy=FAST)
    try:
        job = m.add(REPO, model)
        part = PartialFile(tmp_path, Expected(REPO, NAME, None, None))
        wait_until(lambda: part.size_on_disk() >= STALL_AT)
        wait_until(lambda: (p := m.get(job).progress) is not None and p.done == STALL_AT, 5)
        t = time.monotonic()
        m.pause(job)
        settled = m.wait(job, PAUSE_BOUND_S + 5)
        took = time.monotonic() - t
        assert settled.state == JobState.PAUSED and took <= PAUSE_BOUND_S, (settled.state, took)
        assert settled.progress is not None and settled.progress.done == STALL_AT  # the bar keeps its bytes
    finally:
        hub.release()
        m.close()
