"""Images in chat requests: OpenAI's `image_url` content parts, read and checked.

`parse.py` takes each part's URL as it is (`image_url_of`); `attach_images` then refuses what
cannot be served before anything costly (a model without a projector, more images than allowed, a
remote URL when remote images are off), reads each image (a base64 `data:` URL, or a bounded
fetch of an http(s) URL when the server allows it), and passes the bytes through the one image
door (`engine/vision/image_door.py`) off the event loop. Every refusal is a worded 400.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import anyio.to_thread
import httpx2

from prefill.engine.message import ImagePart, Message
from prefill.engine.vision.errors import ImageRejected
from prefill.engine.vision.image_door import MAX_BYTES, check_image
from prefill.server.errors import bad_request

MAX_IMAGES = 8  # in one request
IMAGE_BODY_BYTES = 32 * 1024 * 1024  # the body limit grows by this when the model reads images
REMOTE_TIMEOUT_S = 10.0
REMOTE_REDIRECTS = 3
_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(?:;[^,;]*)*),", re.ASCII)

NO_PROJECTOR = ("This model was loaded without its projector (an mmproj file), so it cannot read images: "
                "start prefill serve with --mmproj FILE, or put the model's mmproj-….gguf beside it.")


@dataclass(frozen=True)
class ImageRef:
    """An image a request's message asks for: where (`message`, `part`) and its URL, unread."""

    message: int
    part: int
    url: str

    @property
    def param(self) -> str:
        return f"messages[{self.message}].content[{self.part}]"


def image_url_of(part: dict[str, Any], param: str) -> str:
    """The URL of an `image_url` part (`{"type": "image_url", "image_url": {"url": ...}}`, or the URL as
    a string), checked for shape only."""
    value = part.get("image_url")
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str) or not url:
        raise bad_request(f"{param}: an image_url part needs 'image_url': {{'url': ...}}.", param)
    if isinstance(value, dict) and value.get("detail") not in (None, "auto", "low", "high"):
        raise bad_request(f"{param}.image_url.detail must be auto, low or high.", param)
    return url


async def attach_images(messages: Sequence[Message], refs: Sequence[ImageRef], can_see: bool,
                        allow_remote: bool, allow_private: bool = False,
                        gate: asyncio.Semaphore | None = None) -> tuple[Message, ...]:
    """`messages` with the images `refs` name read, checked and attached to their messages. A remote
    image on a loopback, private or link-local address is refused unless `allow_private` (a client must
    not reach, through this server, what only the server's own network can). `gate` bounds how many
    images are decoded at once (a decoded image may take hundreds of MiB).

    Raises:
        ApiError: 400 for a model without a projector, too many images, a remote URL that is not
            allowed or could not be fetched, or an image the door refuses.
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
    attached: dict[int, list[ImagePart]] = {}
    for ref in refs:
        data = _data_url(ref) if ref.url.startswith("data:") else await _fetch(ref, allow_private)
        try:
            if gate is None:
                part = await anyio.to_thread.run_sync(check_image, data)
            else:
                async with gate:
                    part = await anyio.to_thread.run_sync(check_image, data)
        except ImageRejected as e:
            raise bad_request(f"{ref.param}: {e.reason}.", ref.param, "invalid_image") from None
        attached.setdefault(ref.message, []).append(part)
    return tuple(replace(m, images=(*m.images, *attached[i])) if i in attached else m
                 for i, m in enumerate(messages))


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


async def _fetch(ref: ImageRef, allow_private: bool) -> bytes:
    """A remote image, bounded: a timeout, a few redirects (each one's address checked), and no more
    than MAX_BYTES read."""
    url = ref.url
    try:
        async with httpx2.AsyncClient(timeout=REMOTE_TIMEOUT_S, follow_redirects=False) as client:
            for _ in range(REMOTE_REDIRECTS + 1):
                if not allow_private:
                    await _check_public(url, ref)
                async with client.stream("GET", url, headers={"Accept": "image/*"}) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        if not _is_http(url):
                            break
                        continue
                    if response.status_code != 200:
                        raise bad_request(f"{ref.param}: fetching the image gave HTTP {response.status_code}.",
                                          ref.param, "image_fetch_failed")
                    return await _read_bounded(response, ref)
    except httpx2.HTTPError as e:
        raise bad_request(f"{ref.param}: the image could not be fetched ({type(e).__name__}).", ref.param,
                          "image_fetch_failed") from None
    raise bad_request(f"{ref.param}: the image's URL redirects too often or away from http(s).", ref.param,
                      "image_fetch_failed")


async def _read_bounded(response: httpx2.Response, ref: ImageRef) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BYTES:
            raise bad_request(f"{ref.param}: the image is larger than {MAX_BYTES // 2**20} MiB.", ref.param)
        chunks.append(chunk)
    return b"".join(chunks)


async def _check_public(url: str, ref: ImageRef) -> None:
    """Refuse a URL whose host resolves to a loopback, private, link-local or otherwise reserved address."""
    host = urlsplit(url).hostname or ""
    try:
        infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        raise bad_request(f"{ref.param}: the image's host {host!r} could not be resolved.", ref.param,
                          "image_fetch_failed") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address.is_global:
            raise bad_request(f"{ref.param}: the image's host {host!r} is on a private or local address, "
                              "which this server does not fetch from.", ref.param, "image_fetch_refused")
