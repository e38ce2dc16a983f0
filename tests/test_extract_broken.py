"""Broken and hostile PDFs: a clear one-line error, or a repaired read with a note."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.extract import load
from docsan.extract.pdf import load_pdf

NO_OCR = ExtractConfig(ocr="never")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("broken_empty_0byte.pdf", "empty file"),
        ("broken_not_a_pdf.pdf", "not a PDF"),
        ("broken_encrypted_userpw_4p.pdf", "encrypted"),
    ],
)
def test_unreadable_files_raise_one_line_input_errors(corpus: Path, name: str, problem: str) -> None:
    with pytest.raises(InputError) as info:
        load(corpus / name, NO_OCR)
    message = str(info.value)
    assert problem in message and name in message
    assert "\n" not in message


def test_bad_page_count_falls_back_to_pdfplumber(corpus: Path) -> None:
    doc = load(corpus / "broken_bad_pagecount_poppler67295.pdf", NO_OCR)
    assert len(doc.pages) == 1
    assert "TestString123" in doc.text
    assert any("pdfplumber" in n for n in doc.notes)


def test_repaired_xref_is_noted(corpus: Path) -> None:
    doc = load_pdf(corpus / "grumman_service_bulletin_scan_2p.pdf", NO_OCR)
    assert len(doc.pages) == 2
    assert any("repaired" in n for n in doc.notes)
    # A scan with OCR off: empty pages, each with a note saying why.
    assert doc.text == ""
    assert sum("no text layer; OCR is off" in n for n in doc.notes) == 2


def test_page_limit_cuts_with_a_gap_and_pages_reads_the_rest(corpus: Path) -> None:
    # Past max_pages the document is a partial result that says how to read the rest, not a refusal.
    doc = load_pdf(corpus / "irs_i1040nr_2007_50p.pdf", ExtractConfig(max_pages=10, ocr="never"))
    assert [p.number for p in doc.pages] == list(range(1, 11))
    assert [str(g) for g in doc.gaps] == [
        "pages 11-50 not read: over the max_pages limit of 10 (read them with --pages 11-50)"
    ]
    rest = load_pdf(corpus / "irs_i1040nr_2007_50p.pdf", ExtractConfig(pages="11-12,50-", ocr="never"))
    assert [p.number for p in rest.pages] == [11, 12, 50] and rest.gaps == ()
    # A range past the end is this file's problem; a range that is no range is refused before any file is read.
    with pytest.raises(InputError, match="--pages 60- selects no page of this 50-page PDF"):
        load_pdf(corpus / "irs_i1040nr_2007_50p.pdf", ExtractConfig(pages="60-"))
    with pytest.raises(ValidationError, match="bad page range '3-1'"):
        ExtractConfig(pages="3-1")
