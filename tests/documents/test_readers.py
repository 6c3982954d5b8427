"""The door for documents: each format read by its structure, each fault refused in words."""

from __future__ import annotations

import codecs
import os
import zipfile
from pathlib import Path

import pytest

from prefill.documents.errors import (
    BadEncoding,
    BinaryFile,
    EncryptedDocument,
    MalformedFile,
    ScannedDocument,
    TooLarge,
    UnsupportedFormat,
    ZipBomb,
)
from prefill.documents.readers import ReadLimits, read_document
from tests.documents.pdf_writer import write_pdf


def blocks(doc):  # noqa: ANN001, ANN201
    return [(b.kind, b.level, b.page, doc.block_text(b)) for b in doc.blocks]


def test_pdf_pages_and_a_scanned_page_said(tmp_path: Path) -> None:
    p = write_pdf(tmp_path / "a.pdf", [["Title.", "First paragraph of the first page, long enough to wrap " * 3],
                                       [], ["Third page."]])
    doc = read_document(p)
    assert doc.kind == "pdf" and doc.pages == 3
    assert [(b.page, doc.block_text(b)[:16]) for b in doc.blocks] == [
        (1, "Title."), (1, "First paragraph "), (3, "Third page.")]
    assert doc.notes == ["pages without a text layer (scanned), not read: 2"]


def test_pdf_without_any_text_layer_is_scanned(tmp_path: Path) -> None:
    p = write_pdf(tmp_path / "scan.pdf", [[], []])
    with pytest.raises(ScannedDocument, match="no text layer on any of its 2 pages"):
        read_document(p)


def test_encrypted_pdf_refused_and_one_with_an_empty_password_read(tmp_path: Path) -> None:
    from pypdf import PdfWriter

    plain = write_pdf(tmp_path / "plain.pdf", [["Secret words."]])
    for name, user in (("locked.pdf", "hunter2"), ("open.pdf", "")):
        w = PdfWriter(clone_from=str(plain))
        w.encrypt(user_password=user, owner_password="owner", algorithm="AES-128")
        with (tmp_path / name).open("wb") as f:
            w.write(f)
    with pytest.raises(EncryptedDocument, match="needs a password"):
        read_document(tmp_path / "locked.pdf")
    assert "Secret words." in read_document(tmp_path / "open.pdf").text


def test_pdf_past_the_page_limit(tmp_path: Path) -> None:
    p = write_pdf(tmp_path / "long.pdf", [[f"Page {i}."] for i in range(12)])
    with pytest.raises(TooLarge, match="has 12 pages, more than the 10") as e:
        read_document(p, ReadLimits(max_pages=10))
    assert e.value.limit == "max_pages"


@pytest.mark.parametrize("data", [b"%PDF-1.4\n garbage", b"not a pdf at all", b"%PDF-1.4\n" + os.urandom(2000)])
def test_broken_pdf_is_malformed(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "bad.pdf"
    p.write_bytes(data)
    with pytest.raises(MalformedFile):
        read_document(p)


def _docx(path: Path) -> Path:
    import docx

    d = docx.Document()
    d.add_heading("Report", level=1)
    d.add_paragraph("Intro words.")
    d.add_heading("Costs", level=2)
    t = d.add_table(rows=2, cols=2)
    t.cell(0, 0).text, t.cell(0, 1).text = "item", "price"
    t.cell(1, 0).text, t.cell(1, 1).text = "lamp", "12"
    d.add_paragraph("After the table.")
    d.save(str(path))
    return path


def test_docx_headings_paragraphs_and_tables_in_order(tmp_path: Path) -> None:
    doc = read_document(_docx(tmp_path / "r.docx"))
    assert blocks(doc) == [("heading", 1, None, "Report"), ("paragraph", 0, None, "Intro words."),
                           ("heading", 2, None, "Costs"), ("table", 0, None, "item | price\nlamp | 12"),
                           ("paragraph", 0, None, "After the table.")]


def test_docx_zip_bomb_refused_by_its_declared_sizes(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.docx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", b" " * (8 * 1024 * 1024))
    with pytest.raises(ZipBomb, match="times its packed size"):
        read_document(bomb)
    with pytest.raises(ZipBomb, match="would unpack to 8,388,6"):
        read_document(bomb, ReadLimits(max_unpacked=4 * 1024 * 1024))


def test_docx_that_lies_about_its_sizes_is_refused(tmp_path: Path) -> None:
    # A part declaring fewer bytes than it holds: unpacking stops at the declared size and the check fails.
    src = tmp_path / "src.docx"
    with zipfile.ZipFile(src, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", b"<w:document>" + b"x" * 100_000 + b"</w:document>")
    data = bytearray(src.read_bytes())
    for sig in (b"PK\x03\x04", b"PK\x01\x02"):  # local header and central directory: uncompressed size field
        at = data.find(sig)
        field = at + (22 if sig == b"PK\x03\x04" else 24)
        data[field:field + 4] = (100).to_bytes(4, "little")
    liar = tmp_path / "liar.docx"
    liar.write_bytes(bytes(data))
    with pytest.raises((ZipBomb, MalformedFile)):
        read_document(liar)


def test_docx_that_is_not_a_zip(tmp_path: Path) -> None:
    p = tmp_path / "x.docx"
    p.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(MalformedFile):
        read_document(p)


def test_html_text_only(tmp_path: Path) -> None:
    p = tmp_path / "p.html"
    p.write_text("<html><head><title>T</title><style>.x{color:red}</style><script>alert('no')</script></head>"
                 "<body><h1>Top</h1><p>One &amp; <b>two</b>.</p><script>var x = 1;</script><pre>a  b\n c</pre>"
                 "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table></body></html>")
    doc = read_document(p)
    assert blocks(doc) == [("heading", 1, None, "Top"), ("paragraph", 0, None, "One & two."),
                           ("code", 0, None, "a  b\n c"), ("table", 0, None, "k | v\na | 1")]
    assert "alert" not in doc.text and "color" not in doc.text and "var x" not in doc.text


def test_markdown_structure(tmp_path: Path) -> None:
    p = tmp_path / "m.md"
    p.write_text("# Title\n\nPara one\nstill one.\n\nSub\n---\n\n```py\nx = 1\n\ny = 2\n```\n\n| a | b |\n|---|---|\n"
                 "| 1 | 2 |\n")
    doc = read_document(p)
    assert blocks(doc) == [("heading", 1, None, "Title"), ("paragraph", 0, None, "Para one\nstill one."),
                           ("heading", 2, None, "Sub"), ("code", 0, None, "x = 1\n\ny = 2"),
                           ("table", 0, None, "| a | b |\n|---|---|\n| 1 | 2 |")]


def test_csv_rows_keep_their_column_names(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("name,age\nAda,36\nAlan,41\n")
    assert read_document(p).text == "name: Ada; age: 36\nname: Alan; age: 41"


def test_code_and_text(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text("def f():\n    return 1\n\n\ndef g():\n    pass\n")
    assert [b.kind for b in read_document(tmp_path / "c.py").blocks] == ["code", "code"]
    (tmp_path / "t.txt").write_text("One.\n\nTwo.\n")
    assert blocks(read_document(tmp_path / "t.txt")) == [("paragraph", 0, None, "One."), ("paragraph", 0, None, "Two.")]


def test_binary_junk_refused(tmp_path: Path) -> None:
    p = tmp_path / "junk.txt"
    p.write_bytes(os.urandom(4096))
    with pytest.raises((BinaryFile, BadEncoding)):
        read_document(p)
    p.write_bytes(b"text\x00with nul")
    with pytest.raises(BinaryFile, match="NUL bytes"):
        read_document(p)
    p.write_bytes(b"\x01\x02\x03\x04\x05\x06" * 100 + b"words")
    with pytest.raises(BinaryFile, match="control characters"):
        read_document(p)


def test_encodings(tmp_path: Path) -> None:
    p = tmp_path / "e.txt"
    p.write_bytes(codecs.BOM_UTF16_LE + "Grüße".encode("utf-16-le"))
    assert read_document(p).text == "Grüße"
    p.write_bytes("café".encode("cp1252"))
    doc = read_document(p)
    assert doc.text == "café" and doc.notes == ["not UTF-8: read as Windows-1252"]
    p.write_bytes(b"abc \x81\x8d def")  # bytes no encoding accepted maps
    with pytest.raises(BadEncoding, match="neither UTF-8"):
        read_document(p)


def test_size_limit_and_unknown_kinds(tmp_path: Path) -> None:
    p = tmp_path / "big.txt"
    p.write_text("x" * 2000)
    with pytest.raises(TooLarge, match="2,000 bytes, more than the 1,000") as e:
        read_document(p, ReadLimits(max_bytes=1000))
    assert e.value.limit == "max_bytes"
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(UnsupportedFormat, match="photo.jpg: is a .jpg file"):
        read_document(tmp_path / "photo.jpg")
