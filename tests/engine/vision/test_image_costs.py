"""What an image may cost the door, priced from its header before Pillow decodes it: a progressive
JPEG's scans counted, a WebP's declared size read, and a decode cut at its deadline or when its
caller stops wanting it."""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from collections.abc import Callable

import pytest
from PIL import Image, ImageFile

from prefill.engine.vision import image_door
from prefill.engine.vision.errors import ImageRejected
from prefill.engine.vision.image_door import check_image
from prefill.store.archive_images import BadImage, export_images


def progressive_jpeg(size: tuple[int, int] = (64, 48), quality: int = 90) -> bytes:
    out = io.BytesIO()
    Image.effect_noise(size, 60).convert("RGB").save(out, "JPEG", progressive=True, quality=quality)
    return out.getvalue()


def scan_bomb(repeats: int, size: tuple[int, int] = (64, 48)) -> bytes:
    """A progressive JPEG whose last scan is repeated `repeats` times: libjpeg decodes every one, each
    over the whole picture (an 8000 × 8000 one costs milliseconds a scan, and a 20 MiB file holds
    ~180,000 of them)."""
    data = progressive_jpeg(size)
    last, end = data.rindex(b"\xff\xda"), data.rindex(b"\xff\xd9")
    return data[:end] + data[last:end] * repeats + data[end:]


def webp_claiming(width: int, height: int) -> bytes:
    """A lossless WebP of one pixel whose header then declares `width` x `height`: the ~40-byte bomb
    (a one-colour bitstream decodes to any size)."""
    out = io.BytesIO()
    Image.new("RGB", (1, 1), (9, 9, 9)).save(out, "WEBP", lossless=True)
    data = bytearray(out.getvalue())
    assert data[12:16] == b"VP8L" and data[20] == 0x2F
    bits = int.from_bytes(data[21:25], "little") & ~0x0FFF_FFFF
    data[21:25] = (bits | (width - 1) | ((height - 1) << 14)).to_bytes(4, "little")
    return bytes(data)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every call of Pillow's Image.open (the door's first step of decoding) while the test runs."""
    calls: list[object] = []
    real: Callable[..., Image.Image] = Image.open

    def spy(*args: object, **kwargs: object) -> Image.Image:
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(Image, "open", spy)
    return calls


def test_a_progressive_jpeg_with_its_usual_scans_passes() -> None:
    data = progressive_jpeg(quality=97)  # noise at a high quality: stuffed 0xFF bytes in every scan
    assert image_door.jpeg_scans(data) == data.count(b"\xff\xda") >= 6
    part = check_image(data)
    assert (part.width, part.height) == (64, 48) and part.mime == "image/jpeg"


def test_a_jpeg_scan_bomb_is_refused_before_it_is_decoded(opened: list[object]) -> None:
    bomb = scan_bomb(2000)
    with pytest.raises(ImageRejected, match=r"JPEG of more than 100 scans.*the limit is 100") as e:
        check_image(bomb)
    assert "photo has about 10" in e.value.reason
    assert opened == []  # counted from the markers: Pillow never saw it


def test_a_scan_count_under_the_cap_but_past_the_limit_set_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_door, "MAX_SCANS", 12)
    check_image(scan_bomb(2))
    with pytest.raises(ImageRejected, match="more than 12 scans"):
        check_image(scan_bomb(20))


def test_a_tiny_webp_declaring_64_megapixels_is_refused_before_it_is_decoded(opened: list[object]) -> None:
    bomb = webp_claiming(8000, 8000)
    assert len(bomb) < 64
    with pytest.raises(ImageRejected, match=r"too large to decode safely \(8000 × 8000 pixels\).*24 megapixels"):
        check_image(bomb)
    assert opened == []  # libwebp allocates the canvas as soon as Pillow opens the file


def test_a_small_webp_with_an_honest_header_passes() -> None:
    part = check_image(webp_claiming(30, 20))
    assert (part.width, part.height) == (30, 20)


@pytest.mark.parametrize("fmt", ["WEBP", "PNG", "JPEG", "GIF", "BMP"])
def test_every_format_is_refused_past_the_pixel_bound_before_decoding(
        monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    monkeypatch.setattr(image_door, "MAX_PIXELS", 1000)
    monkeypatch.setattr(image_door, "MAX_WEBP_PIXELS", 1000)
    out = io.BytesIO()
    Image.new("RGB", (40, 30), (1, 2, 3)).save(out, fmt)
    loads: list[object] = []
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda img: loads.append(img))
    with pytest.raises(ImageRejected, match=r"\(40 × 30 pixels\).*the limit is 0 megapixels"):
        check_image(out.getvalue())
    assert loads == []


def test_a_decode_past_its_deadline_is_refused_in_words() -> None:
    out = io.BytesIO()
    Image.effect_noise((600, 400), 60).convert("RGB").save(out, "PNG")
    with pytest.raises(ImageRejected, match=r"took longer than 0 s to decode"):
        check_image(out.getvalue(), deadline_s=0.0)
    assert check_image(out.getvalue(), deadline_s=60.0).width == 600


def test_a_decode_its_caller_no_longer_wants_stops() -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(ImageRejected, match="no longer wanted"):
        check_image(progressive_jpeg(), stop=stop)


def test_a_large_jpeg_is_decoded_at_a_reduced_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.BytesIO()
    Image.new("RGB", (4000, 1000), (30, 90, 200)).save(out, "JPEG")
    decoded: list[tuple[int, int]] = []
    real = ImageFile.ImageFile.load

    def spy(img: ImageFile.ImageFile) -> object:
        got = real(img)
        decoded.append(img.size)
        return got

    monkeypatch.setattr(ImageFile.ImageFile, "load", spy)
    part = check_image(out.getvalue(), max_side=500)
    assert (part.width, part.height) == (500, 125)
    assert decoded and decoded[0][0] <= 1000  # libjpeg scaled it by 1/4 or more while decoding


def test_a_history_import_refuses_a_scan_bomb_at_the_door() -> None:
    bomb = scan_bomb(2000)
    entry = {"mime": "image/jpeg", "width": 64, "height": 48, "data": base64.b64encode(bomb).decode()}
    with pytest.raises(BadImage, match=r"images\[.*\]: the image is a JPEG of more than 100 scans"):
        export_images({hashlib.sha256(bomb).hexdigest(): entry})


def test_a_jpeg_of_countless_markers_is_refused_before_it_is_opened(opened: list[object]) -> None:
    plain = progressive_jpeg()
    for filler in (b"\xff\xfe\x00\x02", b"\xff"):  # empty comments; fill bytes before a marker
        with pytest.raises(ImageRejected, match="JPEG of more than 2000 markers"):
            check_image(plain[:2] + filler * 50_000 + plain[2:])
    assert opened == []
    assert check_image(plain[:2] + b"\xff\xfe\x00\x02" * 100 + plain[2:]).width == 64
