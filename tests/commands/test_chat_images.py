"""`prefill chat --image`: the tiny vision model sees the image with the first prompt, counts its
tokens, reuses them on the next turn, and the projector in use (or missing) is said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefill.bench.tiny_vision import VisionShape, write_tiny_vision
from tests.commands.test_chat_terminal import SMALL, prefill
from tests.engine.vision.conftest import png

N_IMAGE = VisionShape().n_patches


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_tiny_vision(tmp_path_factory.mktemp("chat-vision"))


@pytest.fixture
def picture(tmp_path: Path) -> Path:
    p = tmp_path / "red.png"
    p.write_bytes(png(64, 48))
    return p


def turns(tmp_path: Path, model: Path, *args: str) -> tuple[list[dict[str, object]], str]:
    out = prefill(tmp_path, "chat", "--model", str(model), "--prompt", "what is it", "--prompt", "and now",
                  "--json", "--max-tokens", "4", *SMALL, *args)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()], out.stderr


def test_the_image_goes_with_the_first_prompt_and_is_reused(tmp_path: Path, pair: tuple[Path, Path],
                                                             picture: Path) -> None:
    (first, second), err = turns(tmp_path, pair[0], "--image", str(picture))
    assert "prefill: projector: mmproj.gguf (found beside the model)" in err
    assert first["image_tokens"] == N_IMAGE and float(first["image_encode_ms"]) > 0  # type: ignore[arg-type]
    assert second["image_tokens"] == N_IMAGE and second["image_encode_ms"] == 0.0
    assert int(second["cached_tokens"]) >= int(first["prompt_tokens"])  # type: ignore[call-overload]
    (plain, _), _ = turns(tmp_path, pair[0])
    assert plain["image_tokens"] == 0 and int(first["prompt_tokens"]) >= int(plain["prompt_tokens"]) + N_IMAGE  # type: ignore[call-overload]


def test_an_explicit_projector_is_named(tmp_path: Path, pair: tuple[Path, Path], picture: Path) -> None:
    (first, _), err = turns(tmp_path, pair[0], "--image", str(picture), "--mmproj", str(pair[1]))
    assert "prefill: projector: mmproj.gguf\n" in err and first["image_tokens"] == N_IMAGE


def test_without_a_projector_an_image_is_refused_in_words(tmp_path: Path, pair: tuple[Path, Path],
                                                         picture: Path) -> None:
    out = prefill(tmp_path, "chat", "--model", str(pair[0]), "--mmproj", "none", "--image", str(picture),
                  "--prompt", "what is it", *SMALL)
    assert out.returncode != 0
    assert "without a projector, and images need one" in out.stderr and "Traceback" not in out.stderr


def test_a_file_that_is_not_an_image_is_refused_before_loading(tmp_path: Path, pair: tuple[Path, Path]) -> None:
    bad = tmp_path / "notes.png"
    bad.write_text("just some notes")
    out = prefill(tmp_path, "chat", "--model", str(pair[0]), "--image", str(bad), "--prompt", "x", *SMALL)
    assert out.returncode != 0
    assert "prefill: notes.png: this is not an image Prefill can read" in out.stderr
    assert "projector" not in out.stderr  # refused before the model loaded
