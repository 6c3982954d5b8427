"""Download progress as frozen snapshots: bytes, speed and time left.

The meter is fed from the download thread and hands out immutable snapshots a few
times a second, so a UI can show them without locks and without redrawing per chunk.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Stage = Literal["checking", "downloading", "verifying", "done"]


@dataclass(frozen=True)
class DownloadProgress:
    """Where one download stands.

    Attributes:
        done: bytes on disk (kept from earlier runs included).
        total: bytes of the whole model (all parts), None if the hub did not say.
        speed: bytes per second over the last few seconds.
        eta: seconds left at that speed, None when unknown.
        filename: the file being worked on.
        stage: checking (what is on disk), downloading, verifying (SHA-256), done.
    """

    done: int
    total: int | None
    speed: float
    eta: float | None
    filename: str
    stage: Stage

    @property
    def fraction(self) -> float | None:
        return self.done / self.total if self.total else None


class SpeedMeter:
    """Counts bytes and reports throttled `DownloadProgress` snapshots.

    Args:
        total: expected bytes, or None.
        report: called with each snapshot (from the download thread).
        interval: least seconds between two reports (the last one always goes).
        window: seconds of history the speed is averaged over.
    """

    def __init__(
        self,
        total: int | None,
        report: Callable[[DownloadProgress], None],
        interval: float = 0.2,
        window: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total = total
        self.done = 0
        self.filename = ""
        self.stage: Stage = "checking"
        self._report = report
        self._interval = interval
        self._window = window
        self._clock = clock
        self._samples: deque[tuple[float, int]] = deque()
        self._last_report = float("-inf")

    def kept(self, n: int) -> None:
        """Bytes already on disk: they count as done but not toward the speed."""
        self.done += n
        self._samples.clear()

    def add(self, n: int) -> None:
        """Bytes just written (negative when a part had to start over)."""
        self.done += n
        now = self._clock()
        self._samples.append((now, self.done))
        while len(self._samples) > 2 and now - self._samples[0][0] > self._window:
            self._samples.popleft()
        if now - self._last_report >= self._interval:
            self.emit()

    def set_stage(self, stage: Stage, filename: str = "") -> None:
        self.stage = stage
        if filename:
            self.filename = filename
        self.emit()

    def speed(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        return (d1 - d0) / (t1 - t0) if t1 > t0 else 0.0

    def snapshot(self) -> DownloadProgress:
        speed = self.speed()
        eta = None
        if self.total is not None and speed > 0:
            eta = max(0.0, (self.total - self.done) / speed)
        return DownloadProgress(self.done, self.total, speed, eta, self.filename, self.stage)

    def emit(self) -> None:
        self._last_report = self._clock()
        self._report(self.snapshot())
