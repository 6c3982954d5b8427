"""A remote endpoint gets a turn's images as base64 image_url parts: shown to Prefill's own server
with the tiny vision model, which reads and counts them."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from prefill.bench.tiny_vision import VisionShape, write_tiny_vision
from prefill.engine.events import Finished
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import SamplingSettings
from prefill.remote.engine import RemoteEngine
from prefill.remote.tool_calls import openai_message
from tests.engine.vision.conftest import image
from tests.server.conftest import Served, start_server, stop_server


def test_images_go_before_the_text_as_data_urls() -> None:
    img = image()
    sent = openai_message(Message("user", "what is it", images=(img,)))
    url = f"data:image/png;base64,{base64.b64encode(img.data).decode()}"
    assert sent == {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                 {"type": "text", "text": "what is it"}]}
    assert openai_message(Message("user", "", images=(img,)))["content"] == [
        {"type": "image_url", "image_url": {"url": url}}]
    assert openai_message(Message("user", "plain"))["content"] == "plain"


@pytest.fixture(scope="module")
def seeing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model, _ = write_tiny_vision(tmp_path_factory.mktemp("remote-vision"))
    s = start_server(model, "--ctx", "1024", "--parallel", "1")
    yield s
    stop_server(s)


def test_a_remote_engine_sends_the_image_and_the_server_counts_it(seeing: Served) -> None:
    engine = RemoteEngine(seeing.base, seeing.model_id, seeing.key)
    sampling = SamplingSettings(temperature=0.0, max_tokens=3)
    try:
        def prompt_tokens(msg: Message) -> int:
            end = list(engine.stream(ChatRequest.of([msg], sampling)))[-1]
            assert isinstance(end, Finished) and end.reason in ("stop", "length"), end
            return end.metrics.prompt_tokens

        seen = prompt_tokens(Message("user", "what is it", images=(image(),)))
        plain = prompt_tokens(Message("user", "what is it"))
        assert seen >= plain + VisionShape().n_patches
    finally:
        engine.close()
