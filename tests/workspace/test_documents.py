"""Conversion of real PDF, DOCX, XLSX and PPTX files to Markdown, and its cache."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace import _documents as documents
from toolcards.workspace._documents import convert_document, is_document

pytest.importorskip("markitdown")


def make_pdf(path: Path, text: str) -> None:
    """A one-page PDF with ``text`` in Helvetica, with a correct cross-reference table."""
    content = f"BT /F1 24 Tf 72 700 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(out)


def make_docx(path: Path, heading: str, paragraph: str) -> None:
    """A minimal WordprocessingML package: content types, one relationship, the body."""
    word = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr(
            "_rels/.rels",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        archive.writestr(
            "word/document.xml",
            f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{word}"><w:body>'
            f"<w:p><w:r><w:rPr><w:b/></w:rPr><w:t>{heading}</w:t></w:r></w:p>"
            f"<w:p><w:r><w:t>{paragraph}</w:t></w:r></w:p>"
            "</w:body></w:document>",
        )


def make_xlsx(path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Item", "Cost"])
    sheet.append(["Servers", 1200])
    sheet.append(["Licences", 300])
    book.save(path)


def make_pptx(path: Path) -> None:
    pptx = pytest.importorskip("pptx")
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Roadmap 2025"
    slide.placeholders[1].text = "Ship the workspace card"
    deck.save(path)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "internal" / "cache"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_pdf_converts(ws: Path, cache: Path) -> None:
    make_pdf(ws / "memo.pdf", "Hello from a tiny PDF")
    assert "Hello from a tiny PDF" in convert_document(ws / "memo.pdf", cache)


def test_docx_converts(ws: Path, cache: Path) -> None:
    make_docx(ws / "report.docx", "Quarterly report", "Revenue grew by 12 percent.")
    markdown = convert_document(ws / "report.docx", cache)
    assert "Quarterly report" in markdown
    assert "Revenue grew by 12 percent." in markdown


def test_xlsx_converts_to_a_table(ws: Path, cache: Path) -> None:
    make_xlsx(ws / "budget.xlsx")
    markdown = convert_document(ws / "budget.xlsx", cache)
    assert "Budget" in markdown
    assert "| Servers | 1200 |" in markdown


def test_pptx_converts(ws: Path, cache: Path) -> None:
    make_pptx(ws / "deck.pptx")
    markdown = convert_document(ws / "deck.pptx", cache)
    assert "Roadmap 2025" in markdown
    assert "Ship the workspace card" in markdown


def test_suffixes_are_case_insensitive(ws: Path, cache: Path) -> None:
    make_pdf(ws / "SCAN.PDF", "upper case suffix")
    assert is_document(ws / "SCAN.PDF")
    assert "upper case suffix" in convert_document(ws / "SCAN.PDF", cache)


def test_the_cache_serves_unchanged_files_and_never_stale_ones(
    ws: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_pdf(ws / "memo.pdf", "First version")
    first = convert_document(ws / "memo.pdf", cache)
    assert len(list((cache / "documents").iterdir())) == 1
    assert sorted(p.name for p in ws.iterdir()) == ["memo.pdf"]

    def no_conversion(data: bytes, suffix: str, name: str) -> str:
        raise AssertionError("converted again")

    monkeypatch.setattr(documents, "_convert", no_conversion)
    assert convert_document(ws / "memo.pdf", cache) == first

    monkeypatch.undo()
    make_pdf(ws / "memo.pdf", "Second version")
    assert "Second version" in convert_document(ws / "memo.pdf", cache)
    assert len(list((cache / "documents").iterdir())) == 2


def test_unsupported_and_missing_files_are_retriable(ws: Path, cache: Path) -> None:
    (ws / "notes.txt").write_text("x")
    with pytest.raises(RetriableError, match="not a document"):
        convert_document(ws / "notes.txt", cache, shown_as="notes.txt")
    with pytest.raises(RetriableError, match="workspace_glob"):
        convert_document(ws / "gone.pdf", cache, shown_as="gone.pdf")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("broken.docx", b"this is not a zip archive"),
        ("broken.xlsx", b"PK\x03\x04 truncated"),
        ("broken.pdf", b"plain text, not a PDF"),
        ("broken.pptx", b"PK\x05\x06" + b"\x00" * 18),
    ],
)
def test_a_damaged_document_fails_with_its_name(ws: Path, cache: Path, name: str, content: bytes) -> None:
    (ws / name).write_bytes(content)
    with pytest.raises(ToolFailed, match=repr(name)):
        convert_document(ws / name, cache, shown_as=name)
    assert not (cache / "documents").exists()


def test_without_markitdown_the_install_command_is_given(
    ws: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents, "_converter", None)
    monkeypatch.setitem(sys.modules, "markitdown", None)
    make_pdf(ws / "memo.pdf", "x")
    with pytest.raises(ToolFailed, match=r"pip install 'toolcards\[docs\]'"):
        convert_document(ws / "memo.pdf", cache)
