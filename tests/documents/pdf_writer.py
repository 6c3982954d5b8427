"""A minimal PDF writer for tests and the benchmark: pages of Helvetica text lines, or pages without text.

Written here (not a library) so the tests make their PDFs without a PDF-making dependency; pypdf reads
them as it reads any PDF with a text layer.
"""

from __future__ import annotations

import textwrap
from pathlib import Path


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[list[str]], width: int = 90) -> bytes:
    """A PDF of `pages`: each a list of paragraphs (wrapped at `width` characters, a blank line between
    them); an empty list makes a page with a drawn box and no text, as a scanned page has none."""
    objects: list[bytes] = []
    n = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    for i, paras in enumerate(pages):
        content_id = 5 + 2 * i
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> "
                       f">> /Contents {content_id} 0 R >>".encode())
        if paras:
            lines: list[str] = []
            for p in paras:
                if lines:
                    lines.append("")
                lines.extend(textwrap.wrap(p, width) or [""])
            body = "BT /F1 10 Tf 12 TL 50 750 Td " + " ".join(f"({_escape(x)}) Tj T*" for x in lines) + " ET"
        else:
            body = "0.5 g 50 50 500 700 re f"
        data = body.encode("cp1252", "replace")
        objects.append(f"<< /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for k, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{k} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def write_pdf(path: Path, pages: list[list[str]]) -> Path:
    path.write_bytes(pdf_bytes(pages))
    return path
