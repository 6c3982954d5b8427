"""The door for images: every image enters Prefill here, decoded and checked once with Pillow.

A file that is not an image, a damaged one, a decompression bomb (a small file declaring a huge
picture), or one past the byte limit is refused with a typed `ImageRejected` worded for a person;
behind the door an `ImagePart` can be trusted. An image larger than `max_side` is scaled down (a
projector sees a few hundred pixels a side; llama.cpp would otherwise decode and resize a huge
bitmap on every prompt), and a photo's EXIF orientation is applied, as a viewer shows it.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from prefill.engine.message import ImagePart
from prefill.engine.vision.errors import ImageRejected

MAX_BYTES = 20 * 1024 * 1024  # an encoded image (OpenAI's own limit per image is 20 MB)
MAX_PIXELS = 64_000_000  # decoded: 64 MP is ~190 MiB of RGB; more is refused as a bomb
MAX_SIDE = 2048  # larger images are scaled down to this many pixels on their long side
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
_MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif", "BMP": "image/bmp"}


def read_image_file(path: str | Path, max_side: int = MAX_SIDE) -> ImagePart:
    """An image file through the door.

    Raises:
        ImageRejected: the file cannot be read, or the door refuses what it holds.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise ImageRejected(_too_big(size), p.name)
        data = p.read_bytes()
    except OSError as e:
        raise ImageRejected(f"the file cannot be read ({e.strerror or e})", p.name) from None
    try:
        return check_image(data, max_side)
    except ImageRejected as e:
        raise ImageRejected(e.reason, p.name) from None


def check_image(data: bytes, max_side: int = MAX_SIDE) -> ImagePart:
    """Decode `data`, check it, and return it as an `ImagePart` (scaled down past `max_side`).

    Raises:
        ImageRejected: empty, too large a file, not an image of a known format, damaged or
            truncated, or declaring more than `MAX_PIXELS` pixels.
    """
    if not data:
        raise ImageRejected("the image is empty")
    if len(data) > MAX_BYTES:
        raise ImageRejected(_too_big(len(data)))
    img, fmt = _decode(data)
    img, changed = _upright(img)
    if max(img.size) > max_side:
        img = img.copy()
        img.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        changed = True
    if fmt not in ("PNG", "JPEG", "WEBP"):  # GIF and BMP: stored as PNG (one frame, compressed)
        changed = True
    if not changed:
        return ImagePart(data, _MIME[fmt], img.width, img.height)
    out = io.BytesIO()
    _flatten(img).save(out, "PNG")
    return ImagePart(out.getvalue(), "image/png", img.width, img.height)


def rgb_pixels(part: ImagePart) -> tuple[int, int, bytes]:
    """Width, height and packed RGB bytes of an image that passed the door (what mtmd takes)."""
    img, _fmt = _decode(part.data)
    img = _flatten(_upright(img)[0])
    return img.width, img.height, img.tobytes()


def _upright(img: Image.Image) -> tuple[Image.Image, bool]:
    """The image as a viewer shows it, and whether its EXIF orientation turned or flipped it.
    (`ImageOps.exif_transpose` copies the whole image even when there is nothing to turn.)"""
    if img.getexif().get(ExifTags.Base.Orientation, 1) not in range(2, 9):
        return img, False
    return ImageOps.exif_transpose(img), True


def _decode(data: bytes) -> tuple[Image.Image, str]:
    """Open and fully decode; every fault becomes an ImageRejected."""
    with warnings.catch_warnings():
        # Pillow warns past MAX_IMAGE_PIXELS and raises past twice that: both are refusals here.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            img = Image.open(io.BytesIO(data), formats=FORMATS)
            width, height = img.size
            if width <= 0 or height <= 0:
                raise ImageRejected("the image has no pixels")
            if width * height > MAX_PIXELS:
                raise ImageRejected(_bomb(width, height))
            img.load()
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise ImageRejected(_bomb(0, 0)) from None
        except UnidentifiedImageError:
            raise ImageRejected(
                "this is not an image Prefill can read (PNG, JPEG, WebP, GIF or BMP)") from None
        except ImageRejected:
            raise
        except Exception as e:  # Pillow's decoders raise OSError, ValueError, SyntaxError, EOFError…
            raise ImageRejected(f"the image is damaged or cut short ({_why(e)})") from None
    fmt = img.format or "PNG"
    return img, fmt


def _flatten(img: Image.Image) -> Image.Image:
    """RGB, with any transparency laid on white (as a chat shows a transparent image)."""
    if img.mode == "RGB":
        return img
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        back = Image.new("RGB", rgba.size, (255, 255, 255))
        back.paste(rgba, mask=rgba.getchannel("A"))
        return back
    return img.convert("RGB")


def _bomb(width: int, height: int) -> str:
    size = f" ({width} × {height} pixels)" if width and height else ""
    return (f"the image declares a size too large to decode safely{size}: the limit is "
            f"{MAX_PIXELS // 1_000_000} megapixels")


def _too_big(n: int) -> str:
    return f"the image is {n / 2**20:.1f} MiB; the limit is {MAX_BYTES // 2**20} MiB"


def _why(e: Exception) -> str:
    text = str(e).strip() or type(e).__name__
    return text[:160]
