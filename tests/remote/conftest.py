"""Fixtures for remote engines: a fault server on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.remote.fault_server import FaultServer


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    s = FaultServer()
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.release.set()
    s.shutdown()
    s.server_close()
    t.join()
