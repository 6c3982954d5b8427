"""Download progress as frozen snapshots: bytes, speed and time left.

The meter is fed from the download thread and hands out immutable snapshots a few
times a second, so a UI can show them without locks and without redrawing per chunk.
"""

from __future__ import annotations

import threading
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
        idle: seconds since the last byte arrived (a stall shows as it grows, with the bytes it has).
    """

    done: int
    total: int | None
    speed: float
    eta: float | None
    filename: str
    stage: Stage
    idle: float = 0.0

    @property
    def fraction(self) -> float | None:
        return self.done / self.total if self.total else None


class SpeedMeter:
    """Counts bytes and reports throttled `DownloadProgress` snapshots.

    Fed by the transfer's thread (`add`) and ticked by its watch (`tick`, a few times a second even
    when no byte comes), so a stalled download still reports the bytes it has and a falling speed;
    a lock keeps the two in order.

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
        self._last_byte = clock()
        self._lock = threading.RLock()

    def kept(self, n: int) -> None:
        """Bytes already on disk: they count as done but not toward the speed."""
        with self._lock:
            self.done += n
            self._samples.clear()

    def add(self, n: int) -> None:
        """Bytes just written (negative when a part had to start over)."""
        with self._lock:
            self.done += n
            now = self._clock()
            if n:
                self._last_byte = now
            self._samples.append((now, self.done))
            while len(self._samples) > 2 and now - self._samples[0][0] > self._window:
                self._samples.popleft()
            if now - self._last_report >= self._interval:
                self.emit()

    def tick(self) -> None:
        """No byte came for a while: report what is on disk, the speed falling as the stall lasts."""
        self.add(0)

    def set_stage(self, stage: Stage, filename: str = "") -> None:
        with self._lock:
            self.stage = stage
            if filename:
                self.filename = filename
            self._last_byte = self._clock()
            self.emit()

    def speed(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        return (d1 - d0) / (t1 - t0) if t1 > t0 else 0.0

    def snapshot(self) -> DownloadProgress:
        with self._lock:
            speed = self.speed()
            eta = None
            if self.total is not None and speed > 0:
                eta = max(0.0, (self.total - self.done) / speed)
            idle = max(0.0, self._clock() - self._last_byte)
            return DownloadProgress(self.done, self.total, speed, eta, self.filename, self.stage, idle)

    def emit(self) -> None:
        """Report now (under the lock, so two threads' reports arrive in the order they were made)."""
        with self._lock:
            self._last_report = self._clock()
            self._report(self.snapshot())
