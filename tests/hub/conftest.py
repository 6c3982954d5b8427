"""Fixtures: a fake hub on 127.0.0.1 and a client pointed at it, never the real hub."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from prefill.hub.client import HubClient
from prefill.hub.downloader import download_model
from prefill.hub.errors import DownloadStopped
from prefill.hub.partial import Expected, PartialFile
from prefill.hub.transfer import RetryPolicy
from tests.hub.fake_hub import FakeFile, FakeHub, FakeRepo

FAST = RetryPolicy(attempts=3, backoff=0.01, timeout=10)


@pytest.fixture(autouse=True)
def _hub_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf_home")))  # no saved login leaks in
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub() as h:
        yield h


@pytest.fixture
def client(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> HubClient:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    return HubClient(endpoint=hub.url)


def payload(n: int, seed: int = 1) -> bytes:
    """Deterministic bytes that are not all alike."""
    return random.Random(seed).randbytes(n)


def add_repo(hub: FakeHub, repo_id: str, files: dict[str, bytes], **kw: object) -> FakeRepo:
    return hub.add(FakeRepo(repo_id, {k: FakeFile(v) for k, v in files.items()}, **kw))  # type: ignore[arg-type]


def wait_until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll `cond` (a file growing on disk, a server state) until it holds."""
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def paused_download(hub: FakeHub, client: HubClient, models: Path, repo_id: str, filename: str, at: int) -> int:
    """Start downloading a repository's only model, pause it once `at` bytes are on disk; the bytes kept."""
    (model,) = client.list_models(repo_id).models
    part = PartialFile(models, Expected(repo_id, filename, None, None))
    hub.stall(filename, at)
    stop = threading.Event()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            download_model(client, models, repo_id, model, stop, policy=FAST)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    wait_until(lambda: part.size_on_disk() >= at)
    stop.set()  # pause: the stalled read returns after release, then the loop stops
    hub.release()
    worker.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], DownloadStopped), outcome
    return part.size_on_disk()
