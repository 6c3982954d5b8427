"""The door for images: every image enters Prefill here, decoded and checked once with Pillow.

A file that is not an image, a damaged one, a decompression bomb (a small file declaring a huge
picture), or one past the byte limit is refused with a typed `ImageRejected` worded for a person;
behind the door an `ImagePart` can be trusted. An image larger than `max_side` is scaled down (a
projector sees a few hundred pixels a side; llama.cpp would otherwise decode and resize a huge
bitmap on every prompt), and a photo's EXIF orientation is applied, as a viewer shows it.

What a decode will cost is priced from the file before Pillow decodes it (STYLE 28): the pixels a
header declares (a WebP's read here, as libwebp allocates its canvas when Pillow merely opens it),
and a JPEG's scans, counted from its markers (libjpeg runs every scan of a progressive JPEG over the
whole picture: a 20 MiB file of repeated scans takes minutes). A large JPEG is decoded at a reduced
scale, and a decode past its deadline, or one its caller stopped wanting, ends at the next block of
the file Pillow reads.
"""

from __future__ import annotations

import io
import re
import threading
import time
import warnings
from pathlib import Path

from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from prefill.engine.message import ImagePart
from prefill.engine.vision.errors import ImageRejected

MAX_BYTES = 20 * 1024 * 1024  # an encoded image (OpenAI's own limit per image is 20 MB)
MAX_PIXELS = 50_000_000  # declared: a 48 MP phone photo passes; a decode then holds at most ~400 MiB
MAX_WEBP_PIXELS = 24_000_000  # libwebp and Pillow hold four copies of a WebP's canvas: ~16 bytes a pixel
MAX_SCANS = 100  # in one JPEG: a progressive photo has about 10, and each costs a pass over every pixel
MAX_MARKERS = 2000  # segments and fill bytes before and between a JPEG's scans (Pillow reads each in Python)
DECODE_DEADLINE_S = 10.0  # one image's decode, checked between the blocks of the file Pillow reads
MAX_SIDE = 2048  # larger images are scaled down to this many pixels on their long side
READ_BLOCK = 16 * 1024  # the file is fed to the decoder in blocks this size (Pillow's default: 64 KiB)
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
# The end of a scan's entropy-coded data: 0xFF (and any fill) before a byte that is neither a
# stuffed zero nor a restart marker.
_ENTROPY_END = re.compile(rb"\xff+[^\x00\xd0-\xd7\xff]")
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


def check_image(data: bytes, max_side: int = MAX_SIDE, *, deadline_s: float = DECODE_DEADLINE_S,
                stop: threading.Event | None = None) -> ImagePart:
    """Decode `data`, check it, and return it as an `ImagePart` (scaled down past `max_side`).
    The decode is refused past `deadline_s`, or once `stop` is set (its caller no longer wants it).

    Raises:
        ImageRejected: empty, too large a file, not an image of a known format, damaged or
            truncated, declaring more than `MAX_PIXELS` pixels, a JPEG of more than `MAX_SCANS`
            scans, or a decode past its deadline or stopped.
    """
    if not data:
        raise ImageRejected("the image is empty")
    if len(data) > MAX_BYTES:
        raise ImageRejected(_too_big(len(data)))
    _price(data)
    img, fmt, declared = _decode(data, deadline_s, stop, max_side)
    if max(img.size) > max_side:
        img.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)  # in place: no full-size copy
    changed = img.size != declared  # scaled while decoding (a JPEG's draft) or after
    img, turned = _upright(img)
    if fmt not in ("PNG", "JPEG", "WEBP"):  # GIF and BMP: stored as PNG (one frame, compressed)
        changed = True
    if not (changed or turned):
        return ImagePart(data, _MIME[fmt], img.width, img.height)
    out = io.BytesIO()
    _flatten(img).save(out, "PNG")
    return ImagePart(out.getvalue(), "image/png", img.width, img.height)


def jpeg_scans(data: bytes, stop_after: int | None = None) -> int:
    """The scans (SOS segments) of a JPEG, counted from its markers without decoding anything;
    counting ends once past `stop_after`. What is not a JPEG's marker structure ends the count
    (Pillow then judges the file)."""
    return _jpeg_counts(data, stop_after, None)[0]


def _jpeg_counts(data: bytes, max_scans: int | None, max_steps: int | None) -> tuple[int, int]:
    """Scans and marker steps (segments and fill bytes, Pillow walks each in Python) of a JPEG, the
    walk ending once either is past its limit."""
    scans = steps = 0
    pos, end = 2, len(data)
    while pos + 4 <= end:
        steps += 1
        if max_steps is not None and steps > max_steps:
            break
        if data[pos] != 0xFF:
            break
        marker = data[pos + 1]
        if marker == 0xFF:  # a fill byte before a marker
            pos += 1
            continue
        if marker == 0xD9:  # end of image
            break
        if 0xD0 <= marker <= 0xD8 or marker == 0x01:  # markers without a length
            pos += 2
            continue
        length = int.from_bytes(data[pos + 2:pos + 4], "big")
        if length < 2:
            break
        pos += 2 + length
        if marker == 0xDA:  # a scan: its entropy-coded data runs to the next marker but a restart
            scans += 1
            if max_scans is not None and scans > max_scans:
                break
            found = _ENTROPY_END.search(data, pos)
            if found is None:
                break
            pos = found.end() - 2
    return scans, steps


def rgb_pixels(part: ImagePart) -> tuple[int, int, bytes]:
    """Width, height and packed RGB bytes of an image that passed the door (what mtmd takes)."""
    img, _fmt, _declared = _decode(part.data, DECODE_DEADLINE_S, None, None)
    img = _flatten(_upright(img)[0])
    return img.width, img.height, img.tobytes()


def _upright(img: Image.Image) -> tuple[Image.Image, bool]:
    """The image as a viewer shows it, and whether its EXIF orientation turned or flipped it.
    (`ImageOps.exif_transpose` copies the whole image even when there is nothing to turn.)"""
    if img.getexif().get(ExifTags.Base.Orientation, 1) not in range(2, 9):
        return img, False
    return ImageOps.exif_transpose(img), True


def _price(data: bytes) -> None:
    """Refuse, from the file's own header, what would cost too much to decode: a WebP declaring too
    many pixels, a JPEG of too many scans. (Other formats' sizes are read by Pillow's lazy open.)"""
    size = _webp_size(data)
    if size is not None and size[0] * size[1] > MAX_WEBP_PIXELS:
        raise ImageRejected(_bomb(*size, limit=MAX_WEBP_PIXELS, kind="WebP"))
    if data[:2] != b"\xff\xd8":
        return
    scans, steps = _jpeg_counts(data, MAX_SCANS, MAX_MARKERS)
    if scans > MAX_SCANS:
        raise ImageRejected(
            f"the image is a JPEG of more than {MAX_SCANS} scans, which would take minutes to decode: the "
            f"limit is {MAX_SCANS} (a progressive photo has about 10)")
    if steps > MAX_MARKERS:
        raise ImageRejected(f"the image is a JPEG of more than {MAX_MARKERS} markers: the limit is "
                            f"{MAX_MARKERS} (a photo has a few dozen)")


def _webp_size(data: bytes) -> tuple[int, int] | None:
    """The canvas a WebP declares (simple lossy, lossless, or extended), or None for other files."""
    if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    kind = data[12:16]
    if kind == b"VP8X":
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if kind == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if kind == b"VP8 ":
        return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
    return None


class _Metered(io.BytesIO):
    """The file as Pillow reads it, a block at a time: a read past the deadline, or once the caller
    no longer wants the image, refuses it (the decoder stops between two blocks)."""

    def __init__(self, data: bytes, deadline_s: float, stop: threading.Event | None):
        super().__init__(data)
        self.deadline_s = deadline_s
        self.until = time.monotonic() + deadline_s
        self.stop = stop

    def read(self, size: int | None = -1, /) -> bytes:
        if self.stop is not None and self.stop.is_set():
            raise ImageRejected("the image was no longer wanted (its request ended)")
        if time.monotonic() >= self.until:
            raise ImageRejected(f"the image took longer than {self.deadline_s:g} s to decode")
        return super().read(size)


def _decode(data: bytes, deadline_s: float, stop: threading.Event | None,
            max_side: int | None) -> tuple[Image.Image, str, tuple[int, int]]:
    """Open, check the declared size, and decode (a large JPEG at the smallest scale that still has
    `max_side` pixels on its long side); every fault becomes an ImageRejected. Returns the image, its
    format and the size its header declared."""
    with warnings.catch_warnings():
        # Pillow warns past MAX_IMAGE_PIXELS and raises past twice that: both are refusals here.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            img = Image.open(_Metered(data, deadline_s, stop), formats=FORMATS)
            width, height = declared = img.size
            if width <= 0 or height <= 0:
                raise ImageRejected("the image has no pixels")
            if width * height > MAX_PIXELS:
                raise ImageRejected(_bomb(width, height))
            if max_side is not None and img.format == "JPEG" and max(declared) > max_side:
                scale = max_side / max(declared)
                img.draft(None, (max(1, int(width * scale)), max(1, int(height * scale))))
            img.decodermaxblock = READ_BLOCK
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
    return img, fmt, declared


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


def _bomb(width: int, height: int, limit: int | None = None, kind: str = "") -> str:
    size = f" ({width} × {height} pixels)" if width and height else ""
    return (f"the image declares a size too large to decode safely{size}: the limit is "
            f"{(limit or MAX_PIXELS) // 1_000_000} megapixels" + (f" for a {kind}" if kind else ""))


def _too_big(n: int) -> str:
    return f"the image is {n / 2**20:.1f} MiB; the limit is {MAX_BYTES // 2**20} MiB"


def _why(e: Exception) -> str:
    text = str(e).strip() or type(e).__name__
    return text[:160]
