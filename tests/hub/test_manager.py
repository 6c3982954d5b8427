"""The download queue: order, progress events, pause, resume, cancel, failures."""

from __future__ import annotations

import threading
from pathlib import Path

from prefill.hub.client import HubClient
from prefill.hub.errors import ChecksumMismatch
from prefill.hub.manager import DownloadEvent, DownloadManager, JobState
from prefill.hub.paths import PARTIAL_DIR
from tests.hub.conftest import FAST, add_repo, payload, wait_until
from tests.hub.fake_hub import FakeHub

REPO = "org/Q-GGUF"


def _manager(client: HubClient, models: Path, events: list[DownloadEvent]) -> DownloadManager:
    lock = threading.Lock()

    def record(e: DownloadEvent) -> None:
        with lock:
            events.append(e)

    return DownloadManager(client, models, on_event=record, max_parallel=1, policy=FAST)


def test_queue_runs_jobs_in_order_with_events(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, REPO, {"a-Q4_0.gguf": payload(500_000, 1), "b-Q8_0.gguf": payload(700_000, 2)})
    a, b = client.list_models(REPO).models
    events: list[DownloadEvent] = []
    m = _manager(client, tmp_path, events)
    try:
        ja, jb = m.add(REPO, a), m.add(REPO, b)
        assert m.wait(ja, 10).state == JobState.DONE
        done_b = m.wait(jb, 10)
        assert done_b.state == JobState.DONE
        assert done_b.paths[0].read_bytes() == payload(700_000, 2)
    finally:
        m.close()
    order = [(e.job_id, e.state) for e in events if e.state in (JobState.RUNNING, JobState.DONE)]
    assert order.index((ja, JobState.DONE)) < order.index((jb, JobState.RUNNING))  # one at a time
    last = [e for e in events if e.job_id == jb][-1]
    assert last.progress is not None and last.progress.done == 700_000 and last.progress.stage == "done"


def test_pause_resume_cancel(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, REPO, {"a-Q4_0.gguf": payload(3_000_000, 1), "b-Q8_0.gguf": payload(3_000_000, 2)})
    a, b = client.list_models(REPO).models
    hub.stall_after["a-Q4_0.gguf"] = 1_000_000
    events: list[DownloadEvent] = []
    m = _manager(client, tmp_path, events)
    try:
        ja = m.add(REPO, a)
        jb = m.add(REPO, b)
        m.pause(jb)  # still queued: leaves the queue at once
        assert m.get(jb).state == JobState.PAUSED
        wait_until(lambda: any(p.stat().st_size >= 1_000_000 for p in (tmp_path / PARTIAL_DIR).glob("*.part")))
        m.pause(ja)
        hub.release()
        assert m.wait(ja, 10).state == JobState.PAUSED
        m.resume(ja)
        assert m.wait(ja, 10).state == JobState.DONE
        assert any(g.range for g in hub.gets("a-Q4_0.gguf"))  # resumed, not restarted
        m.resume(jb)
        m.cancel(jb)
        assert m.wait(jb, 10).state == JobState.CANCELLED
        assert not list((tmp_path / PARTIAL_DIR).glob("*b-Q8_0*"))  # cancel drops the bytes
    finally:
        m.close()


def test_failure_is_reported_with_typed_error(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, REPO, {"a-Q4_0.gguf": payload(200_000)})
    hub.corrupt["a-Q4_0.gguf"] = 3
    (a,) = client.list_models(REPO).models
    events: list[DownloadEvent] = []
    m = _manager(client, tmp_path, events)
    try:
        job = m.wait(m.add(REPO, a), 10)
    finally:
        m.close()
    assert job.state == JobState.FAILED and isinstance(job.error, ChecksumMismatch)
