"""The tiny vision model (random weights, a LLaVA-style projector) and images to show it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from prefill.bench.tiny_vision import write_tiny_vision
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import ImagePart
from prefill.engine.settings import LoadSettings
from prefill.engine.vision.image_door import check_image

SETTINGS = LoadSettings(n_ctx=1024, n_gpu_layers="none")


@pytest.fixture(scope="session")
def tiny_vision(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """`model.gguf` and `mmproj.gguf`, as `python -m prefill.bench.tiny_vision` writes them."""
    return write_tiny_vision(tmp_path_factory.mktemp("tiny-vision"))


@pytest.fixture(scope="module")
def vision_engine(tiny_vision: tuple[Path, Path]) -> Iterator[ChatEngine]:
    model, mmproj = tiny_vision
    e = ChatEngine.load(model, SETTINGS, mmproj=mmproj)
    yield e
    e.close()


@pytest.fixture
def seeing(vision_engine: ChatEngine) -> ChatEngine:
    """The vision engine with an empty cache, no image encoded yet."""
    vision_engine.reset_cache()
    assert vision_engine.projector is not None
    vision_engine.projector.forget_embeddings()
    return vision_engine


def png(width: int, height: int, color: tuple[int, int, int] = (200, 40, 40), mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, (width, height), color if mode == "RGB" else (*color, 0)).save(out, "PNG")
    return out.getvalue()


def image(color: tuple[int, int, int] = (200, 40, 40), width: int = 64, height: int = 48) -> ImagePart:
    return check_image(png(width, height, color))
