"""Images to `prefill serve` through the official openai client: image_url parts read, counted in
`usage`, reused from a slot's cache on the next turn, and refused in words where they cannot be."""

from __future__ import annotations

import base64
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest

from prefill.bench.tiny_vision import VisionShape, write_tiny_vision
from prefill.engine.message import Message
from prefill.server.errors import ApiError
from prefill.server.images import ImageRef, attach_images
from tests.engine.vision.conftest import png
from tests.engine.vision.test_image_door import declared_png
from tests.server.conftest import Served, start_server, stop_server

N_IMAGE = VisionShape().n_patches


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def ask(text: str, url: str | None) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if url is not None:
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return [{"role": "user", "content": parts}]


@pytest.fixture(scope="module")
def vision_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_tiny_vision(tmp_path_factory.mktemp("served-vision"))


@pytest.fixture(scope="module")
def seeing(vision_pair: tuple[Path, Path]) -> Iterator[Served]:
    s = start_server(vision_pair[0], "--ctx", "1024", "--parallel", "2")  # the mmproj beside it is found
    yield s
    stop_server(s)


@pytest.fixture(scope="module")
def blind(vision_pair: tuple[Path, Path]) -> Iterator[Served]:
    s = start_server(vision_pair[0], "--ctx", "1024", "--parallel", "1", "--mmproj", "none")
    yield s
    stop_server(s)


def test_an_image_is_read_and_counted(seeing: Served) -> None:
    client = seeing.client()
    red = data_url(png(64, 48, (220, 10, 10)))
    with_image = client.chat.completions.create(model=seeing.model_id, messages=ask("what is it", red),  # type: ignore[arg-type]
                                                max_tokens=4, temperature=0)
    without = client.chat.completions.create(model=seeing.model_id, messages=ask("what is it", None),  # type: ignore[arg-type]
                                             max_tokens=4, temperature=0)
    assert with_image.usage is not None and without.usage is not None
    assert with_image.usage.prompt_tokens >= without.usage.prompt_tokens + N_IMAGE
    assert with_image.choices[0].message.content


def test_streamed_with_usage_and_the_next_turn_reuses_the_image(seeing: Served) -> None:
    client = seeing.client()
    blue = data_url(png(40, 40, (10, 10, 220)))
    messages = ask("describe it", blue)
    stream = client.chat.completions.create(model=seeing.model_id, messages=messages, max_tokens=4,  # type: ignore[arg-type]
                                            temperature=0, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    first = chunks[-1].usage
    assert first is not None and first.prompt_tokens > N_IMAGE
    messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "and its colour?"}]
    again = client.chat.completions.create(model=seeing.model_id, messages=messages, max_tokens=4,  # type: ignore[arg-type]
                                           temperature=0)
    assert again.usage is not None and again.usage.prompt_tokens_details is not None
    assert (again.usage.prompt_tokens_details.cached_tokens or 0) >= first.prompt_tokens - 1


@pytest.mark.parametrize(("data", "words"), [
    (b"GIF89a? no, just text", "not an image Prefill can read"),
    (png(300, 200)[:200], "damaged or cut short"),
    (declared_png(100_000, 100_000), "too large to decode safely"),
])
def test_hostile_images_are_refused_in_words(seeing: Served, data: bytes, words: str) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        seeing.client().chat.completions.create(model=seeing.model_id, messages=ask("look", data_url(data)),  # type: ignore[arg-type]
                                                max_tokens=2)
    assert words in str(e.value) and "messages[0].content[1]" in str(e.value)


def test_a_remote_url_is_refused_by_default(seeing: Served) -> None:
    with pytest.raises(openai.BadRequestError, match="does not fetch remote images.*--allow-remote-images"):
        seeing.client().chat.completions.create(model=seeing.model_id,  # type: ignore[arg-type]
                                                messages=ask("look", "https://example.com/cat.png"), max_tokens=2)


def test_a_malformed_data_url_is_refused(seeing: Served) -> None:
    with pytest.raises(openai.BadRequestError, match="must be base64"):
        seeing.client().chat.completions.create(model=seeing.model_id,  # type: ignore[arg-type]
                                                messages=ask("look", "data:image/png,rawbytes"), max_tokens=2)


def test_a_model_without_its_projector_refuses_images(blind: Served) -> None:
    with pytest.raises(openai.BadRequestError, match="without its projector.*--mmproj"):
        blind.client().chat.completions.create(model=blind.model_id,  # type: ignore[arg-type]
                                               messages=ask("look", data_url(png(8, 8))), max_tokens=2)
    answer = blind.client().chat.completions.create(model=blind.model_id, messages=ask("look", None),  # type: ignore[arg-type]
                                                    max_tokens=2)
    assert answer.choices[0].finish_reason in ("stop", "length")


class _Images(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the handler's name)
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/ok.png")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = png(12, 12) if self.path == "/ok.png" else b"x" * 64
        self.send_response(200 if self.path != "/missing.png" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_remote_images_when_allowed_are_fetched_and_checked() -> None:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Images)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    msgs = [Message("user", "look")]
    try:
        with pytest.raises(ApiError, match="private or local address"):  # the server's own network
            anyio.run(attach_images, msgs, [ImageRef(0, 1, base + "/ok.png")], True, True)
        for path in ("/ok.png", "/moved"):
            got = anyio.run(attach_images, msgs, [ImageRef(0, 1, base + path)], True, True, True)
            assert got[0].images[0].width == 12
        for path, words in (("/missing.png", "could not be fetched"), ("/text", "not an image")):
            with pytest.raises(ApiError, match=words):
                anyio.run(attach_images, msgs, [ImageRef(0, 1, base + path)], True, True, True)
    finally:
        httpd.shutdown()


def test_two_slots_read_their_images_at_once(seeing: Served) -> None:
    client = seeing.client()
    results: dict[int, int] = {}

    def one(i: int) -> None:
        url = data_url(png(30 + i, 30, (40 * i, 90, 200 - 40 * i)))
        r = client.chat.completions.create(model=seeing.model_id, messages=ask(f"picture {i}", url),  # type: ignore[arg-type]
                                           max_tokens=6, temperature=0)
        assert r.usage is not None
        results[i] = r.usage.prompt_tokens

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0, 1, 2, 3] and all(n > N_IMAGE for n in results.values())
