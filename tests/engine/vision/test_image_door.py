"""The image door: hostile and awkward files refused in words, large ones scaled, all decoded once."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from prefill.engine.message import ImagePart, Message
from prefill.engine.vision import image_door
from prefill.engine.vision.errors import ImageRejected
from prefill.engine.vision.image_door import check_image, read_image_file, rgb_pixels
from tests.engine.vision.conftest import png


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def declared_png(width: int, height: int) -> bytes:
    """A valid PNG head declaring `width` x `height`, with one tiny IDAT: a decompression bomb's shape."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 16)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")


def test_a_png_passes_as_it_is() -> None:
    data = png(40, 30)
    part = check_image(data)
    assert part == ImagePart(data, "image/png", 40, 30)
    assert len(part.digest) == 64 and part.digest == check_image(data).digest


@pytest.mark.parametrize("fmt, mime", [("JPEG", "image/jpeg"), ("WEBP", "image/webp")])
def test_a_photo_that_needs_no_change_keeps_its_own_bytes(fmt: str, mime: str) -> None:
    out = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(out, fmt)
    part = check_image(out.getvalue())
    assert part == ImagePart(out.getvalue(), mime, 40, 30)  # not re-encoded as PNG
    width, height, rgb = rgb_pixels(part)
    assert (width, height) == (40, 30) and len(rgb) == 40 * 30 * 3


def test_not_an_image_is_refused_in_words() -> None:
    with pytest.raises(ImageRejected, match="not an image Prefill can read"):
        check_image(b"%PDF-1.7 this is a document, not a picture")


def test_an_empty_file_is_refused() -> None:
    with pytest.raises(ImageRejected, match="empty"):
        check_image(b"")


def test_a_truncated_png_is_refused() -> None:
    data = png(300, 200, (1, 2, 3))
    noisy = io.BytesIO()
    Image.effect_noise((300, 200), 64).convert("RGB").save(noisy, "PNG")
    for cut in (data[: len(data) // 2], noisy.getvalue()[: len(noisy.getvalue()) // 2]):
        with pytest.raises(ImageRejected, match="damaged or cut short"):
            check_image(cut)


def test_a_decompression_bomb_is_refused_before_decoding() -> None:
    with pytest.raises(ImageRejected, match="too large to decode safely") as e:
        check_image(declared_png(100_000, 100_000))
    assert "megapixels" in str(e.value)


def test_a_bomb_under_pillows_own_limit_is_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_door, "MAX_PIXELS", 1000)
    with pytest.raises(ImageRejected, match="too large to decode safely"):
        check_image(declared_png(100, 100))


def test_a_file_past_the_byte_limit_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(image_door, "MAX_BYTES", 100)
    f = tmp_path / "big.png"
    f.write_bytes(png(64, 64) + b"\0" * 200)
    with pytest.raises(ImageRejected, match=r"big\.png: the image is 0\.0 MiB; the limit is 0 MiB"):
        read_image_file(f)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ImageRejected, match="nope.png: the file cannot be read"):
        read_image_file(tmp_path / "nope.png")


def test_a_large_image_is_scaled_to_the_long_side() -> None:
    part = check_image(png(3000, 1500), max_side=512)
    assert (part.width, part.height) == (512, 256) and part.mime == "image/png"
    with Image.open(io.BytesIO(part.data)) as img:
        assert img.size == (512, 256)


def test_transparency_is_laid_on_white() -> None:
    part = check_image(png(8, 8, (10, 20, 30), mode="RGBA"))
    w, h, rgb = rgb_pixels(part)
    assert (w, h) == (8, 8) and rgb[:3] == b"\xff\xff\xff"


def test_a_gif_is_kept_as_one_png_frame() -> None:
    out = io.BytesIO()
    frames = [Image.new("P", (10, 10), i) for i in range(3)]
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:])
    part = check_image(out.getvalue())
    assert part.mime == "image/png" and (part.width, part.height) == (10, 10)


def test_exif_orientation_is_applied() -> None:
    img = Image.new("RGB", (40, 20), (9, 9, 9))
    exif = img.getexif()
    exif[0x0112] = 6  # rotate 90° clockwise to view
    out = io.BytesIO()
    img.save(out, "JPEG", exif=exif)
    part = check_image(out.getvalue())
    assert (part.width, part.height) == (20, 40) and part.mime == "image/png"


def test_a_message_with_images_is_hashable_and_renders_markers() -> None:
    a, b = check_image(png(4, 4, (1, 1, 1))), check_image(png(4, 4, (2, 2, 2)))
    m = Message("user", "Which is darker?", images=[a, b])
    assert isinstance(m.images, tuple) and hash(m) == hash(Message("user", "Which is darker?", images=(a, b)))
    shown = m.with_image_markers()
    assert shown.content == f"{a.marker}\n{b.marker}\nWhich is darker?" and shown.images == ()
    assert a.marker != b.marker
