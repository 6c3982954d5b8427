"""Fixtures for the store tests: a real SQLite file in tmp_path and a clock that ticks."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from prefill.store import HistoryStore


def ticking_clock(start: float = 1_700_000_000.0) -> Callable[[], float]:
    """Return a clock that moves one second per call, so ordering by time is exact."""
    counter = itertools.count()
    return lambda: start + next(counter)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "history.sqlite3"


@pytest.fixture
def store(db_path: Path) -> Iterator[HistoryStore]:
    history = HistoryStore(db_path, clock=ticking_clock())
    yield history
    history.close()
