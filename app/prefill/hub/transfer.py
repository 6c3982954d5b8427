"""One file's bytes: a ranged, resumable HTTP GET into a `.part` file.

`transfer` appends to what is already on disk (`Range: bytes=N-`), retries dropped
connections and server errors with backoff (each retry resumes where the last one
stopped), and hashes the bytes on a second thread so SHA-256 costs no download time.

While a response is read a watch (`_Watch`) runs beside it: a few times a second it ticks the
caller's progress (a stalled server still shows the bytes on disk and a falling speed), and when
`stop` is set it shuts the connection, so a read blocked on a silent server returns at once
instead of after the read timeout (pause within a fraction of a second, not 30 s). The bytes
written so far stay: they are on disk before the next read is asked for.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import io
import queue
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message

from prefill.hub.client import error_for_status
from prefill.hub.errors import (
    DownloadError,
    DownloadStopped,
    FileTooLarge,
    NotEnoughSpace,
    TransferFailed,
)
from prefill.hub.partial import PartialFile

CHUNK = 1 << 20
TICK = 0.2  # seconds between the watch's looks at `stop` (and its progress ticks) while a response is read
Locate = Callable[[], tuple[str, dict[str, str]]]  # -> (url, headers), fresh on every attempt


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: `attempts` in a row without progress, waits doubling from `backoff`."""

    attempts: int = 6
    backoff: float = 1.0
    max_backoff: float = 30.0
    timeout: float = 30.0

    def delay(self, failures: int) -> float:
        return float(min(self.max_backoff, self.backoff * 2 ** (failures - 1)))


class _Retry(Exception):
    """An attempt failed in a way worth trying again."""


class _StartOver(_Retry):
    """The kept bytes cannot be continued; the part was emptied."""


class _HashPipe:
    """SHA-256 of a stream on its own thread (hashlib lets go of the GIL for big chunks)."""

    def __init__(self) -> None:
        self.hasher = hashlib.sha256()
        self._q: queue.Queue[bytes | None] = queue.Queue(maxsize=32)
        self._thread = threading.Thread(target=self._run, name="sha256", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (chunk := self._q.get()) is not None:
            self.hasher.update(chunk)

    def feed(self, chunk: bytes) -> None:
        self._q.put(chunk)

    def finish(self) -> str:
        self._q.put(None)
        self._thread.join()
        return self.hasher.hexdigest()


class _Watch:
    """Beside one response being read: ticks progress, and shuts the connection when `stop` is set.

    Shutting the socket (not closing it: another thread is in a read on it) makes a blocked read
    return at once with nothing, on every platform; the reader then sees `stop` and raises.
    """

    def __init__(self, response: http.client.HTTPResponse, stop: threading.Event, tick: Callable[[], None]):
        self._response, self._stop, self._tick = response, stop, tick
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="download-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(TICK):
            if self._stop.is_set():
                self._shut()
                return
            self._tick()

    def _shut(self) -> None:
        try:
            fd = self._response.fileno()
        except (OSError, ValueError):  # already closed: nothing blocks
            return
        try:
            with socket.fromfd(fd, socket.AF_INET, socket.SOCK_STREAM) as s:  # a second descriptor of it
                s.shutdown(socket.SHUT_RDWR)
        except OSError:  # the peer went already
            pass

    def close(self) -> None:
        self._done.set()
        self._thread.join()


def transfer(
    part: PartialFile,
    locate: Locate,
    stop: threading.Event,
    on_bytes: Callable[[int], None],
    policy: RetryPolicy = RetryPolicy(),
    tick: Callable[[], None] = lambda: None,
) -> str:
    """Bring `part` to its full size and return the SHA-256 of its bytes.

    Args:
        part: the partial file; its bytes on disk are kept when they still fit.
        locate: gives the URL and headers for the next attempt (a fresh signed URL).
        stop: set it to stop (pause or cancel): within `TICK` seconds, even while the server
            is silent; bytes so far stay.
        on_bytes: called with the count of every chunk written. The kept prefix is not
            reported: the caller counts it (what `part.prepare()` returned). When the
            part has to start over, it is called once with minus all it held.
        policy: retries and timeouts.
        tick: called every `TICK` seconds while a response is read (from another thread), so
            progress is reported through a stall.

    Raises:
        DownloadStopped: `stop` was set.
        NotEnoughSpace: the disk filled up (ENOSPC); the bytes so far are kept.
        FileTooLarge: the file system cannot hold a file this big (EFBIG); bytes kept.
        TransferFailed: the connection failed `policy.attempts` times in a row.
        HubError: the hub refused (gone, gated, bad token).
    """
    have = part.prepare()
    counted = have  # the kept prefix: the caller counted it already, from its own prepare()

    def count(n: int) -> None:
        nonlocal counted
        counted += n
        on_bytes(n)

    pipe = _HashPipe()
    try:
        part.hash_prefix(pipe.hasher, have)
        failures = 0
        while part.expected.size is None or have < part.expected.size:
            if stop.is_set():
                raise DownloadStopped("stopped")
            before = have
            try:
                have, finished = _attempt(part, locate, have, pipe, stop, count, policy, tick)
                if finished:
                    break
            except _Retry as e:
                if stop.is_set():  # the watch shut the connection: a pause, not a failure
                    raise DownloadStopped("stopped") from None
                have = part.size_on_disk()  # every byte written was also hashed
                if isinstance(e, _StartOver):  # the part was emptied: un-count all of it
                    pipe.finish()
                    pipe = _HashPipe()
                    on_bytes(-counted)
                    have = before = counted = part.prepare()
                failures = 0 if have > before else failures + 1
                if failures >= policy.attempts:
                    raise TransferFailed(
                        f"the download of {part.expected.filename} kept failing ({e}); "
                        f"{have:,} bytes are kept, resume it later"
                    ) from None
                stop.wait(policy.delay(max(failures, 1)))
    finally:
        digest = pipe.finish()
    return digest


def _attempt(
    part: PartialFile,
    locate: Locate,
    have: int,
    pipe: _HashPipe,
    stop: threading.Event,
    on_bytes: Callable[[int], None],
    policy: RetryPolicy,
    tick: Callable[[], None] = lambda: None,
) -> tuple[int, bool]:
    """One GET from `have` on. Returns (bytes on disk, whether the file is complete).

    The bytes go through urllib, not httpx2: on loopback httpx2 streams at a third
    of the speed (h11 parses 64 KiB at a time in Python), and the stdlib reader
    hands back the partial chunk of a dropped connection, so no byte is lost.
    """
    url, headers = locate()
    if have:
        headers = {**headers, "Range": f"bytes={have}-"}
    with open(part.path, "r+b", buffering=0) as f:
        f.seek(have)
        try:
            with http_open(url, headers, policy.timeout) as r:
                status = r.status
                if status == 200 and have:  # the server ignored the range
                    part.discard()
                    raise _StartOver("the server ignored the resume request")
                if have and not r.headers.get("Content-Range", "").startswith(f"bytes {have}-"):
                    part.discard()
                    raise _StartOver("the server resumed at the wrong offset")
                watch = _Watch(r, stop, tick)
                try:
                    while True:
                        try:
                            chunk = r.read1(CHUNK)  # what has arrived: a stall or a kill loses nothing
                        except http.client.IncompleteRead as e:  # keep what did arrive
                            chunk = e.partial
                            if not chunk:
                                break
                        if not chunk:
                            break
                        _write(f, chunk, part, have)
                        pipe.feed(chunk)
                        have += len(chunk)
                        on_bytes(len(chunk))
                        if stop.is_set():
                            raise DownloadStopped("stopped")
                finally:
                    watch.close()
                if stop.is_set():  # the watch shut the connection under the read
                    raise DownloadStopped("stopped")
        except urllib.error.HTTPError as e:
            with e:
                return _on_http_error(part, have, e.code, e.headers)
        except (OSError, http.client.HTTPException) as e:  # refused, reset, timed out, cut
            raise _Retry(_reason(e)) from None
        f.truncate(have)
    size = part.expected.size
    if size is not None and have < size:
        raise _Retry("the connection closed early")
    return have, True


def _on_http_error(part: PartialFile, have: int, code: int, headers: Message) -> tuple[int, bool]:
    exp = part.expected
    if code == 416:
        if have and have == exp.size:
            return have, True
        part.discard()
        raise _StartOver("HTTP 416 to a resume request")
    if code >= 500 or code in (408, 429):
        raise _Retry(f"HTTP {code}")
    if code == 403 and not headers.get("X-Error-Code"):
        raise _Retry("HTTP 403 (an expired download link)")  # locate() fetches a fresh one
    raise error_for_status(code, headers, exp.repo_id, exp.filename)


def _reason(e: BaseException) -> str:
    if isinstance(e, urllib.error.URLError) and e.reason:
        return str(e.reason)
    return type(e).__name__


class _NoAuthOffOrigin(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but never carry the token to another origin (a CDN)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc:
            for key in [k for k in new.headers if k.lower() == "authorization"]:
                del new.headers[key]
        return new


_OPENER = urllib.request.build_opener(_NoAuthOffOrigin())


def http_open(url: str, headers: dict[str, str], timeout: float) -> http.client.HTTPResponse:
    """GET `url` with urllib (redirects followed, the token kept on the hub's origin)."""
    return _OPENER.open(urllib.request.Request(url, headers=headers), timeout=timeout)  # type: ignore[no-any-return]


def _write(f: io.FileIO, chunk: bytes, part: PartialFile, have: int) -> None:
    try:
        view = memoryview(chunk)
        while view:  # a raw write may take only part of the chunk
            view = view[f.write(view) or 0 :]
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            left = (part.expected.size or have) - have
            raise NotEnoughSpace(str(part.path.parent.parent), left) from None
        if e.errno == errno.EFBIG:
            raise FileTooLarge(str(part.path.parent.parent), part.expected.size) from None
        raise DownloadError(f"cannot write {part.path.name}: {e.strerror}") from None
