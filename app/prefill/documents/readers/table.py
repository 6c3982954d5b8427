"""CSV and TSV: each row as "column: value" pairs, so a passage keeps what each number means."""

from __future__ import annotations

import csv
import io

from prefill.documents.readers.base import Document

ROWS_PER_BLOCK = 20


def read_csv(text: str, delimiter: str | None = None) -> Document:
    """Rows under the header's names, `ROWS_PER_BLOCK` rows a table block."""
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    csv.field_size_limit(1 << 24)
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in r)]
    doc = Document("csv")
    if not rows:
        return doc
    header = [h.strip() or f"column {i + 1}" for i, h in enumerate(rows[0])]
    lines: list[str] = []
    for row in rows[1:]:
        pairs = [f"{header[i] if i < len(header) else f'column {i + 1}'}: {c.strip()}"
                 for i, c in enumerate(row) if c.strip()]
        lines.append("; ".join(pairs))
        if len(lines) == ROWS_PER_BLOCK:
            doc.add("table", "\n".join(lines))
            lines = []
    doc.add("table", "\n".join(lines))
    if len(rows) == 1:
        doc.add("table", "; ".join(header))
    return doc
