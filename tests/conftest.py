"""The test run's set-up: the environment, the two tiers (tests/tiers.py) and the shared fixtures.

Nothing here imports llama.cpp: the fixtures that load a model import it when a test asks for them
(tests/model_fixtures.py), so `make test-fast` (`pytest -m "not model"`) never does.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Speculative drafts are checked whatever the timing (engine/drafts/rules.py WEIGH_COSTS), here and in
# the processes tests start: draft counts must not depend on how busy the machine is.
os.environ.setdefault("PREFILL_DRAFT_ALWAYS", "1")

from prefill.engine.settings import SamplingSettings  # noqa: E402
from prefill.store import HistoryStore  # noqa: E402
from tests.remote.fault_server import FaultServer  # noqa: E402
from tests.store.conftest import ticking_clock  # noqa: E402

pytest_plugins = ("tests.tiers", "tests.model_fixtures", "tests.embed_fixtures")

GREEDY = SamplingSettings(temperature=0.0, max_tokens=48)


@pytest.fixture
def history_store(tmp_path: Path) -> Iterator[HistoryStore]:
    """A history of the test's own, with a clock that ticks a second per call. A file in tmp_path (SQLite
    in WAL mode, milliseconds to open): HistoryStore takes a path and makes its folder and a private file
    there, so ":memory:" is not a place it can be."""
    history = HistoryStore(tmp_path / "history" / "history.sqlite3", clock=ticking_clock())
    yield history
    history.close()


@pytest.fixture
def closed_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` where nothing listens: the port is bound here, never listened on,
    so a connection is refused, and no other process can take it while the test runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    """An OpenAI-shaped endpoint on 127.0.0.1 that fails on purpose (remote engines, the window)."""
    s = FaultServer()
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.release.set()
    s.shutdown()
    s.server_close()
    t.join()
