"""Images in chat requests: OpenAI's `image_url` content parts, read and checked.

The codec (`wire/openai_chat.py`) takes each part's URL as it is (an `ImageRef`); `attach_images` then refuses what
cannot be served before anything costly (a model without a projector, more images than allowed, a
remote URL when remote images are off), reads each image (a base64 `data:` URL, or a bounded
fetch of an http(s) URL when the server allows it), and passes the bytes through the one image
door (`engine/vision/image_door.py`) on the server's own small decode pool (`ImageDecoder`), not
on the prompt builds' turns. Every refusal is a worded 400.

A fetch resolves its host once, checks that address, and connects to that very address (the name
goes in Host and in TLS's SNI), so a name that answers differently the second time reaches nothing
new. It has one deadline for the whole fetch and reads at most MAX_BYTES; every way it can fail,
a closed port or an open one that answers something else, reads the same to the client. A client
that leaves ends its fetch and its decode (a decode still queued never starts).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import re
import socket
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit, urlunsplit

import anyio
import anyio.to_thread
import httpx2
from starlette.types import Receive

from prefill.engine.message import ImagePart, Message
from prefill.engine.vision.errors import ImageRejected
from prefill.engine.vision.image_door import DECODE_DEADLINE_S, MAX_BYTES, check_image
from prefill.server.connections import disconnected
from prefill.server.errors import ApiError, bad_request, busy
from prefill.wire.openai_chat import ImageRef as ImageRef

MAX_IMAGES = 8  # in one request
IMAGE_BODY_BYTES = 32 * 1024 * 1024  # the body limit grows by this when the model reads images
FETCH_DEADLINE_S = 10.0  # one remote image's whole fetch: resolving, connecting, redirects, every byte
REMOTE_REDIRECTS = 3
DECODE_WORKERS = 1  # images decoded at once by the server (a decode may hold ~400 MiB)
DECODE_QUEUE = 16  # decodes waiting for it; past that a request is told to come back
_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(?:;[^,;]*)*),", re.ASCII)

_T = TypeVar("_T")

NO_PROJECTOR = ("This model was loaded without its projector (an mmproj file), so it cannot read images: "
                "start prefill serve with --mmproj FILE, or put the model's mmproj-….gguf beside it.")


class ImageDecoder:
    """The server's image decodes, on a pool of their own: at most `workers` at once and `queue`
    waiting, so decoding never takes the turns prompt builds share, and a flood of images is told to
    come back instead of queuing without end. A decode whose request ends while it waits never starts;
    one running is asked to stop at the next block of its file."""

    def __init__(self, workers: int = DECODE_WORKERS, queue: int = DECODE_QUEUE,
                 deadline_s: float = DECODE_DEADLINE_S):
        self.workers, self.queue, self.deadline_s = workers, queue, deadline_s
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="image-decode")
        self._lock = threading.Lock()
        self._pending = 0  # submitted and not yet done (running or waiting)
        self._running = 0

    @property
    def waiting(self) -> int:
        """Decodes submitted that have not started."""
        with self._lock:
            return self._pending - self._running

    async def check(self, data: bytes) -> ImagePart:
        """`data` through the image door on this pool.

        Raises:
            ImageRejected: the door refused it.
            ApiError: 429 when `workers` decodes run and `queue` wait already.
        """
        with self._lock:
            if self._pending >= self.workers + self.queue:
                raise busy("it is decoding as many images as it queues", 2)
            self._pending += 1
        stop = threading.Event()

        def decode() -> ImagePart:
            with self._lock:
                self._running += 1
            try:
                if stop.is_set():  # its request ended while it waited
                    raise ImageRejected("the image was no longer wanted (its request ended)")
                return check_image(data, deadline_s=self.deadline_s, stop=stop)
            finally:
                with self._lock:
                    self._running -= 1

        future = self._pool.submit(decode)
        future.add_done_callback(self._done)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            stop.set()
            future.cancel()  # never starts if it has not
            raise

    def _done(self, _future: Future[ImagePart]) -> None:
        with self._lock:
            self._pending -= 1

    def close(self, wait: bool = True) -> None:
        """Drop the decodes still waiting; with `wait`, until the running ones end."""
        self._pool.shutdown(wait=wait, cancel_futures=True)


async def attach_images(messages: Sequence[Message], refs: Sequence[ImageRef], can_see: bool,
                        allow_remote: bool, allow_private: bool = False, *,
                        decoder: ImageDecoder | None = None, receive: Receive | None = None) -> tuple[Message, ...]:
    """`messages` with the images `refs` name read, checked and attached to their messages. A remote
    image on a loopback, private or link-local address is refused unless `allow_private` (a client must
    not reach, through this server, what only the server's own network can). Images are decoded on
    `decoder`'s pool (one of their own when None). With `receive` (the request's ASGI receive), a client
    that disconnects ends the fetch or decode at once.

    Raises:
        ApiError: 400 for a model without a projector, too many images, a remote URL that is not
            allowed or could not be fetched, or an image the door refuses; 429 when the decoder's
            queue is full; 499 when the client left.
    """
    if not refs:
        return tuple(messages)
    first = refs[0].param
    if not can_see:
        raise bad_request(NO_PROJECTOR, first, "model_cannot_see")
    if len(refs) > MAX_IMAGES:
        raise bad_request(f"A request may hold at most {MAX_IMAGES} images; this one has {len(refs)}.", first)
    for ref in refs:  # every refusal that costs nothing comes before the first fetch or decode
        if not ref.url.startswith("data:") and not _is_http(ref.url):
            raise bad_request(f"{ref.param}: an image URL is a data: URL (base64) or an http(s) URL.", ref.param)
        if _is_http(ref.url) and not allow_remote:
            raise bad_request(f"{ref.param}: this server does not fetch remote images; send the image as a "
                              "base64 data: URL (or start prefill serve with --allow-remote-images).",
                              ref.param, "remote_images_off")
    own = decoder is None
    pool = ImageDecoder(workers=1, queue=0) if decoder is None else decoder
    try:
        attached = await _until_gone(_read_all(refs, allow_private, pool), receive)
    finally:
        if own:
            pool.close(wait=False)
    return tuple(replace(m, images=(*m.images, *attached[i])) if i in attached else m
                 for i, m in enumerate(messages))


async def _read_all(refs: Sequence[ImageRef], allow_private: bool,
                    decoder: ImageDecoder) -> dict[int, list[ImagePart]]:
    attached: dict[int, list[ImagePart]] = {}
    for ref in refs:
        data = _data_url(ref) if ref.url.startswith("data:") else await _fetch(ref, allow_private)
        try:
            part = await decoder.check(data)
        except ImageRejected as e:
            raise bad_request(f"{ref.param}: {e.reason}.", ref.param, "invalid_image") from None
        attached.setdefault(ref.message, []).append(part)
    return attached


async def _until_gone(work: Coroutine[Any, Any, _T], receive: Receive | None) -> _T:
    """The result of `work`, or a 499 as soon as the client disconnects (`work` is cancelled: a fetch
    closes its connection and drops what it read, a queued decode never starts)."""
    if receive is None:
        return await work
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(disconnected(receive))
    either: set[asyncio.Future[Any]] = {task, gone}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            raise ApiError(499, "The client closed the request.")
        return task.result()
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _is_http(url: str) -> bool:
    low = url[:8].lower()
    return low.startswith("http://") or low.startswith("https://")


def _data_url(ref: ImageRef) -> bytes:
    m = _DATA_URL.match(ref.url)
    if m is None or ";base64" not in (m.group("params") or "").lower():
        raise bad_request(f"{ref.param}: a data: URL must be base64 (data:image/png;base64,...).", ref.param)
    payload = ref.url[m.end():]
    if len(payload) > (MAX_BYTES * 4) // 3 + 4:
        raise bad_request(f"{ref.param}: the image is larger than {MAX_BYTES // 2**20} MiB.", ref.param)
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise bad_request(f"{ref.param}: the data: URL's base64 is not valid.", ref.param) from None


def _fetch_failed(ref: ImageRef) -> ApiError:
    """The one refusal for every fetch that fails: a closed port, an unreachable address, a timeout, an
    answer that is not 200, too large a body. (Worded apart, they would map the ports of whatever the
    server can reach.)"""
    return bad_request(
        f"{ref.param}: the image could not be fetched: its URL must answer HTTP 200 with an image of at most "
        f"{MAX_BYTES // 2**20} MiB within {FETCH_DEADLINE_S:g} s (after at most {REMOTE_REDIRECTS} redirects).",
        ref.param, "image_fetch_failed")


async def _fetch(ref: ImageRef, allow_private: bool) -> bytes:
    """A remote image, bounded: one deadline for the whole fetch, a few redirects (each one's address
    resolved once, checked, and connected to), and no more than MAX_BYTES read."""
    try:
        with anyio.fail_after(FETCH_DEADLINE_S):
            return await _fetch_pinned(ref, allow_private)
    except (TimeoutError, httpx2.HTTPError, httpx2.InvalidURL, OSError, UnicodeError, ValueError):
        raise _fetch_failed(ref) from None


async def _fetch_pinned(ref: ImageRef, allow_private: bool) -> bytes:
    url = ref.url
    # Made off the event loop: loading the certificate store takes a CPU tenth of a second or more.
    client = await anyio.to_thread.run_sync(
        partial(httpx2.AsyncClient, timeout=FETCH_DEADLINE_S, follow_redirects=False, trust_env=False))
    async with client:
        for _ in range(REMOTE_REDIRECTS + 1):
            parts = urlsplit(url)
            host = parts.hostname or ""
            address = await _resolve(host, parts.port, ref, allow_private)
            literal = f"[{address}]" if ":" in address else address
            pinned = urlunsplit(parts._replace(netloc=f"{literal}:{parts.port}" if parts.port else literal))
            headers = {"Accept": "image/*", "Accept-Encoding": "identity", "Host": parts.netloc.rpartition("@")[2]}
            async with client.stream("GET", pinned, headers=headers, extensions={"sni_hostname": host}) as response:
                if response.is_redirect and "location" in response.headers:
                    url = urljoin(url, response.headers["location"])
                    if not _is_http(url):
                        break
                    continue
                if response.status_code != 200:
                    break
                return await _read_bounded(response, ref)
    raise _fetch_failed(ref)


async def _read_bounded(response: httpx2.Response, ref: ImageRef) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BYTES:
        raise _fetch_failed(ref)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > MAX_BYTES:
            raise _fetch_failed(ref)
        chunks.append(chunk)
    return b"".join(chunks)


async def _resolve(host: str, port: int | None, ref: ImageRef, allow_private: bool) -> str:
    """The one address a fetch connects to: `host` resolved once, refused when it (or any other address
    the name has) is loopback, private, link-local or otherwise reserved, unless `allow_private`."""
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise bad_request(f"{ref.param}: the image's host {host!r} could not be resolved.", ref.param,
                          "image_fetch_failed") from None
    addresses = [str(info[4][0]).split("%")[0] for info in infos]
    if not addresses:
        raise _fetch_failed(ref)
    if not allow_private and not all(ipaddress.ip_address(a).is_global for a in addresses):
        raise bad_request(f"{ref.param}: the image's host {host!r} is on a private or local address, "
                          "which this server does not fetch from.", ref.param, "image_fetch_refused")
    return addresses[0]
