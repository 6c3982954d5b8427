"""HTML: its text by structure (headings, paragraphs, pre, tables); scripts, styles and markup dropped."""

from __future__ import annotations

from html.parser import HTMLParser

from prefill.documents.readers.base import BlockKind, Document

_DROP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object"})
_BREAK = frozenset({"p", "div", "li", "ul", "ol", "section", "article", "blockquote", "br", "hr", "dd", "dt",
                    "header", "footer", "main", "nav", "aside", "figure", "figcaption", "form", "dl", "body"})
_HEAD = {f"h{i}": i for i in range(1, 7)}
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"})


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.doc = Document("html")
        self.buf: list[str] = []
        self.kind: BlockKind = "paragraph"
        self.level = 0
        self.drop = 0
        self.pre = 0
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.rows: list[str] = []
        self.title: list[str] = []
        self.in_title = False

    def flush(self) -> None:
        text = "".join(self.buf)
        self.buf = []
        if self.kind != "code":
            text = " ".join(text.split())
        self.doc.add(self.kind, text, level=self.level)
        self.kind, self.level = "paragraph", 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in _DROP:
            if tag not in _VOID:
                self.drop += 1
            return
        if self.drop:
            return
        if tag in _HEAD or tag in _BREAK or tag == "pre" or tag == "table":
            if self.cell is None:
                self.flush()
        if tag in _HEAD:
            self.kind, self.level = "heading", _HEAD[tag]
        elif tag == "pre":
            self.pre += 1
            self.kind = "code"
        elif tag == "table":
            self.rows = []
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _DROP:
            self.drop = max(0, self.drop - 1)
            return
        if self.drop:
            return
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if any(self.row):
                self.rows.append(" | ".join(self.row))
            self.row = None
        elif tag == "table":
            self.doc.add("table", "\n".join(self.rows))
            self.rows = []
        elif tag in _HEAD or tag in _BREAK or tag == "pre":
            if self.cell is None:
                self.flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if self.drop:
            return
        if self.cell is not None:
            self.cell.append(data)
        elif self.row is None:
            self.buf.append(data)


def read_html(text: str) -> Document:
    """The document's text; the `<title>` as its first heading where the body has none of its own."""
    r = _Reader()
    r.feed(text)
    r.close()
    r.flush()
    title = " ".join("".join(r.title).split())
    doc = r.doc
    if title and not any(b.kind == "heading" for b in doc.blocks):
        out = Document("html")
        out.add("heading", title, level=1)
        for b in doc.blocks:
            out.add(b.kind, doc.block_text(b), level=b.level)
        return out
    return doc
