"""Paragraphs cut by a page break under a running head, joined again once the furniture is gone (real corpus PDFs).

The DMCA summary prints a three-line running head and a page number on
every page after the first; the Federal Register a head and page numbers
over three columns; the Cancer Council booklet alternating footers; the
Feida audit letter (a scan's OCR layer, Chinese) a footer with the page
count. In each, paragraphs run on from one page to the next.
"""

from __future__ import annotations

import functools
from pathlib import Path

from docsan.api import clean_document
from docsan.config import Config, ExtractConfig
from docsan.extract import load
from docsan.pipeline import CleanResult
from docsan.stages.reflow import Reflow

CONFIG = Config().with_overrides(extract={"ocr": "never"})


@functools.cache
def _clean(path: Path, join_pages: bool = True) -> CleanResult:
    config = CONFIG if join_pages else CONFIG.with_overrides(options={"reflow": {"join_pages": False}})
    return clean_document(load(path, ExtractConfig(ocr="never")), config)


def _paragraph_with(result: CleanResult, text: str) -> str | None:
    for _, block in result.document.blocks():
        for para in block.text.split("\n\n"):
            if text in para:
                return para
    return None


def test_dmca_paragraphs_run_on_under_the_running_head(corpus: Path) -> None:
    result = _clean(corpus / "dmca_copyright_office_summary_18p.pdf")
    joined = result.report.with_code("reflow.across_pages")
    assert [c.page for c in joined] == [3, 6, 9, 13, 15, 17]
    head = "The Digital Millennium Copyright Act of 1998"
    for seam in (
        "measures that prevent unauthorized copying of a copyrighted work",
        "The scope of the protection is set out in two separate paragraphs",
        "are available to anyone on reasonable nondiscriminatory terms",
        "only if the computer already lawfully contains an authorized copy of the program",
    ):
        para = _paragraph_with(result, seam)
        assert para is not None, seam
        assert head not in para
    # The head and the page numbers that stood between the halves are gone, reported by the furniture stage.
    assert result.report.with_code("furniture.running_header")
    # Without the join the halves stay two paragraphs.
    assert _paragraph_with(_clean(corpus / "dmca_copyright_office_summary_18p.pdf", False), joined_seam()) is None


def joined_seam() -> str:
    return "measures that prevent unauthorized copying of a copyrighted work"


def test_federal_register_columns_run_on_to_the_next_page(corpus: Path) -> None:
    result = _clean(corpus / "fedreg_2020-17221_15p.pdf")
    assert {c.page for c in result.report.with_code("reflow.across_pages")} == {1, 6, 14}
    # A hyphen ends no paragraph: the airport's name runs on to page 2, and keeps its hyphen before the capital.
    assert _paragraph_with(result, "after takeoff from Soekarno-Hatta International Airport") is not None
    assert _paragraph_with(result, "may be done by inserting a copy of figures 1 through 9") is not None
    assert _paragraph_with(result, "identified in paragraph (q)(1) of this AD. Information may be emailed") is not None


def test_cancer_council_booklet_joins_prose_and_leaves_lists_and_tables_apart(corpus: Path) -> None:
    result = _clean(corpus / "cancer_council_breast_cancer_guide_76p.pdf")
    pages = [c.page for c in result.report.with_code("reflow.across_pages")]
    assert pages == [36, 49, 53, 60, 62]
    assert _paragraph_with(result, "you will be given pain medicine when you go home") is not None
    # p24 ends a glossary list ("…such as mammograms") and p25 starts another entry: not one paragraph.
    assert _paragraph_with(result, "such as mammograms radiation") is None


def test_irs_prose_joins_and_its_tax_tables_do_not(corpus: Path) -> None:
    result = _clean(corpus / "irs_i1040nr_2007_50p.pdf")
    joined = result.report.with_code("reflow.across_pages")
    assert len(joined) == 12
    assert all(c.page <= 32 for c in joined)  # the tax tables from page 34 on are columns of figures
    assert _paragraph_with(result, "and amount in the appropriate space. You must provide") is not None


def test_chinese_ocr_layer_joins_mid_sentence(corpus: Path) -> None:
    result = _clean(corpus / "zh_feida_audit_letter_scan_ocrlayer_6p.pdf")
    assert [c.page for c in result.report.with_code("reflow.across_pages")] == [5]
    assert _paragraph_with(result, "所以网签和预抵押登记具备物权的效力") is not None


def test_joining_again_changes_nothing(corpus: Path) -> None:
    result = _clean(corpus / "dmca_copyright_office_summary_18p.pdf")
    again = Reflow()(result.document)
    assert not [c for c in again.changes if c.code == "reflow.across_pages"]
