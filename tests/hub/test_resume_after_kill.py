"""A download whose process is killed resumes in the next run from the bytes on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from prefill.hub.client import HubClient
from prefill.hub.downloader import download_model
from prefill.hub.partial import Expected, PartialFile
from tests.hub.conftest import FAST, add_repo, payload, wait_until
from tests.hub.fake_hub import FakeHub

REPO = "org/Tiny-GGUF"
NAME = "tiny-Q5_K_M.gguf"
SIZE = 4_000_000
KILL_AT = 1_500_000

_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from prefill.hub.client import HubClient
    from prefill.hub.downloader import download_model
    endpoint, repo, models = sys.argv[1:4]
    client = HubClient(endpoint=endpoint)
    (model,) = client.list_models(repo).models
    download_model(client, Path(models), repo, model)
    """
)


def test_killed_download_resumes_without_refetching(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    data = payload(SIZE, seed=3)
    add_repo(hub, REPO, {NAME: data})
    hub.stall_after[NAME] = KILL_AT  # the server sends this much, then holds the connection
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "app"), str(root)])}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, hub.url, REPO, str(tmp_path)], env=env)
    try:
        part = PartialFile(tmp_path, Expected(REPO, NAME, None, None)).path
        deadline = time.monotonic() + 30
        while not (part.exists() and part.stat().st_size >= KILL_AT):
            assert child.poll() is None, "the download process ended early"
            assert time.monotonic() < deadline, "the download never reached the stall"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)  # no clean-up code runs: like a crash or a power cut
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    hub.release()  # the server's writes to the dead socket now fail and it logs the request
    wait_until(lambda: len(hub.gets(NAME)) == 1)
    assert part.stat().st_size == KILL_AT

    (model,) = client.list_models(REPO).models
    (path,) = download_model(client, tmp_path, REPO, model, policy=FAST)

    assert path.read_bytes() == data
    first, resumed = hub.gets(NAME)
    assert first.range is None
    assert resumed.range == f"bytes={KILL_AT}-"
    assert resumed.body_bytes == SIZE - KILL_AT  # only the missing bytes crossed the wire
