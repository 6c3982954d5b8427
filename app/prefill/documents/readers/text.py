"""Bytes to text: the encodings accepted, and binary junk refused before it is read as words."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from prefill.documents.errors import BadEncoding, BinaryFile

# Control characters other than tab, newline, form feed and carriage return.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_MAX_CONTROL_SHARE = 0.01


def decode(path: Path, data: bytes, notes: list[str]) -> str:
    """The text of `data`: UTF-8 (with or without its mark), UTF-16 with its mark, else Windows-1252.

    Raises:
        BinaryFile: NUL bytes (without a UTF-16 mark) or more than 1% control characters.
        BadEncoding: Bytes valid in none of the encodings above.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise BadEncoding(path, f"its UTF-16 mark is followed by bytes that are not UTF-16 ({exc.reason} "
                              f"at byte {exc.start})") from exc
        return _checked(path, text)
    if b"\x00" in data[:1 << 20]:
        raise BinaryFile(path, "holds NUL bytes: it is binary data, not text (an image, an archive or a program?)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as first:
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError as exc:
            raise BadEncoding(path, f"is neither UTF-8 (byte {first.start} is {data[first.start]:#04x}) nor "
                              f"Windows-1252 (byte {exc.start}): save it as UTF-8") from exc
        notes.append("not UTF-8: read as Windows-1252")
    return _checked(path, text)


def _checked(path: Path, text: str) -> str:
    sample = text[:1 << 20]
    if sample and len(_CONTROL.findall(sample)) > _MAX_CONTROL_SHARE * len(sample):
        raise BinaryFile(path, "is mostly control characters: it is binary data, not text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def paragraphs(text: str) -> list[str]:
    """Paragraphs: runs of lines between blank lines."""
    return [p for p in re.split(r"\n[ \t]*\n", text) if p.strip()]
