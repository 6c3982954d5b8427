"""DOCX: its parts checked as a zip first (sizes declared and unpacked), then read by python-docx."""

from __future__ import annotations

import zipfile
from pathlib import Path

from prefill.documents.errors import MalformedFile, ZipBomb
from prefill.documents.readers.base import Document, ReadLimits

_PIECE = 1 << 20


def check_zip(path: Path, limits: ReadLimits) -> None:
    """Refuse a zip whose parts would unpack past the limits: first by the sizes it declares, then by
    unpacking each part in pieces and counting (a zip may lie about its sizes).

    Raises:
        ZipBomb: Too many parts, too many bytes unpacked, or a part unpacking too far past its packed size.
        MalformedFile: Not a zip, or a part that does not unpack.
    """
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            if len(infos) > limits.max_parts:
                raise ZipBomb(path, f"holds {len(infos):,} parts, more than the {limits.max_parts:,} a DOCX may have",
                              "max_parts")
            declared = sum(i.file_size for i in infos)
            if declared > limits.max_unpacked:
                raise ZipBomb(path, f"would unpack to {declared:,} bytes, more than the {limits.max_unpacked:,} "
                              "allowed: a zip bomb, or a document too large to read", "max_unpacked")
            for i in infos:
                if i.file_size > _PIECE and i.file_size > limits.max_ratio * max(i.compress_size, 1):
                    raise ZipBomb(path, f"its part {i.filename} unpacks {i.file_size // max(i.compress_size, 1):,} "
                                  f"times its packed size (more than {limits.max_ratio}): a zip bomb", "max_ratio")
            total = 0
            for i in infos:
                with z.open(i) as f:
                    while piece := f.read(_PIECE):
                        total += len(piece)
                        if total > limits.max_unpacked:
                            raise ZipBomb(path, f"unpacks past the {limits.max_unpacked:,} bytes allowed "
                                          "(more than its parts declare): a zip bomb", "max_unpacked")
    except zipfile.BadZipFile as exc:
        raise MalformedFile(path, f"is not a valid DOCX (zip) file: {exc}") from exc
    except (OSError, EOFError, NotImplementedError) as exc:
        raise MalformedFile(path, f"a part of it does not unpack: {exc}") from exc


def read_docx(path: Path, limits: ReadLimits) -> Document:
    """Paragraphs (headings by their style: Title, Heading 1…9) and tables, in the body's order.

    Raises:
        ZipBomb, MalformedFile: See `check_zip`; MalformedFile also where python-docx cannot read it.
    """
    check_zip(path, limits)
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        d = docx.Document(str(path))
    except (PackageNotFoundError, KeyError, ValueError, SyntaxError) as exc:
        raise MalformedFile(path, f"is not a Word document python-docx can read ({type(exc).__name__}: {exc})") \
            from exc
    doc = Document("docx")
    for item in d.iter_inner_content():
        if isinstance(item, Table):
            rows = [" | ".join(_cells(row.cells)) for row in item.rows]
            doc.add("table", "\n".join(r for r in rows if r.strip(" |")))
            continue
        style = (item.style.name if item.style is not None else "") or ""
        level = _heading_level(style)
        if level:
            doc.add("heading", item.text, level=level)
        else:
            doc.add("paragraph", item.text)
    return doc


def _cells(cells: list[object]) -> list[str]:
    out: list[str] = []
    for c in cells:  # a merged cell repeats in every column it spans
        text = " ".join(getattr(c, "text", "").split())
        if not out or text != out[-1]:
            out.append(text)
    return out


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    if style.startswith("Heading "):
        tail = style.removeprefix("Heading ").strip()
        return int(tail) if tail.isdigit() else 1
    return 0
