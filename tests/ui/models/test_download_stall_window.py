"""A download whose hub goes silent mid-file, as the Models page shows it: the bytes on disk (not "0%"),
how long nothing came, and a Pause that answers within a second or so (the test hub holds the stall
for 30 s; the transfer's read timeout is 10 s here)."""

from __future__ import annotations

import time
from pathlib import Path

from prefill.engine.units import format_bytes
from prefill.hub.manager import JobState
from prefill.hub.partial import Expected, PartialFile
from prefill.ui.models.page import ModelsPage
from tests.hub.conftest import _hub_env, add_repo, client, hub, payload  # noqa: F401 - fixtures
from tests.hub.fake_hub import FakeHub
from tests.ui.test_models_page import REPO, WAIT, download, models_dir, open_repo, page  # noqa: F401 - fixtures

NAME = "big-Q4_0.gguf"
SIZE, KEPT, STALL = 6_000_000, 1_500_000, 3_000_000
PAUSE_BOUND_S = 3.0


def test_a_stalled_download_shows_the_bytes_on_disk_and_pauses_at_once(
        qtbot, page: ModelsPage, hub: FakeHub, models_dir: Path) -> None:  # noqa: F811
    add_repo(hub, REPO, {NAME: payload(SIZE, 3)})
    open_repo(qtbot, page, REPO)
    qtbot.waitUntil(lambda: len(page.fits) == 1, timeout=WAIT)  # the header reads are over
    q = page.queue
    part = PartialFile(models_dir, Expected(REPO, NAME, None, None))
    hub.stall(NAME, KEPT)  # a first run that stops at 1.5 MB: paused, its bytes kept
    job = download(qtbot, page, NAME)
    qtbot.waitUntil(lambda: part.size_on_disk() >= KEPT, timeout=WAIT)
    with qtbot.waitSignal(q.state_changed, timeout=WAIT, check_params_cb=lambda e: e.state == JobState.PAUSED):
        q.button(job, "pause").click()
    hub.stall(NAME, STALL)  # resumed, the hub goes silent again at 3 MB
    try:
        assert q.row(job).words.text().startswith(f"{format_bytes(KEPT)} of {format_bytes(SIZE)} · 25%")
        q.button(job, "resume").click()
        qtbot.waitUntil(lambda: part.size_on_disk() >= STALL, timeout=WAIT)
        row = q.row(job)
        # While nothing comes: every byte on disk, half of the file, and for how long the hub has been silent.
        qtbot.waitUntil(lambda: "no data from the hub for" in row.words.text(), timeout=WAIT)
        assert row.words.text().startswith(f"{format_bytes(STALL)} of {format_bytes(SIZE)} · 50% · ")
        assert row.bar.value() == 500 and row.state.text() == "Downloading"
        t = time.monotonic()
        q.button(job, "pause").click()
        qtbot.waitUntil(lambda: q.state(job) == JobState.PAUSED, timeout=int(PAUSE_BOUND_S * 1000) + 5_000)
        took = time.monotonic() - t
        assert took <= PAUSE_BOUND_S, f"Pause took {took:.1f} s"
        assert row.words.text() == f"{format_bytes(STALL)} of {format_bytes(SIZE)} · 50%"  # the bytes stay
        assert part.size_on_disk() == STALL and row.buttons["resume"].isEnabled()
    finally:
        hub.release()
    with qtbot.waitSignal(q.finished, timeout=WAIT):
        q.button(job, "resume").click()
    assert q.events[job].paths[0].read_bytes() == payload(SIZE, 3)
