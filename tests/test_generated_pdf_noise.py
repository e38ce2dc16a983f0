"""Noise drawn into a PDF written here (PyMuPDF), read back by the layout extractor, removed by the stages.

Regression tests for the bench's English noisy PDF (``bench/noise_pdf.py``):
a heading drawn four times over itself in a font whose Latin glyphs are wide
(PyMuPDF's built-in ``china-s``), and paragraphs set solid (no space between
them), which the extractor returns as one block.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from docsan.api import clean_file
from docsan.config import Config, ExtractConfig
from docsan.extract import load
from docsan.model import BBox, Block, Document, Page
from docsan.stages.repeats import Repeats

HEADING = "Management Discussion and Analysis"
PARAS = [
    "The committee reviewed the quarterly figures for every region and found that the northern sites had "
    "exceeded their budget for the third time in a row, mostly because of overtime paid during the outage.",
    "Procurement rules were changed in March: every order above the threshold now needs two signatures, "
    "and suppliers must confirm delivery dates in writing before the order is placed with them.",
    "The audit of the data centre found no missing equipment, but the inventory lists of two rooms were "
    "out of date and had to be rebuilt from the purchase records of the last three years.",
]


def _write(path: Path, pages: list[list[str]], *, fake_bold: bool = False) -> Path:
    pdf = pymupdf.open()
    for body in pages:
        page = pdf.new_page(width=595, height=842)
        y = 70.0
        if fake_bold:
            for k in range(4):  # drawn four times, 0.2 pt apart, as the bench's noisy PDF does
                page.insert_text((56 + 0.2 * k, y + 12), HEADING, fontname="china-s", fontsize=13)
            y += 24
        # Set solid, as one text box: a paragraph ends only in its short last
        # line, with no extra space before the next one.
        page.insert_textbox(pymupdf.Rect(56, y, 539, 842), "\n".join(body), fontname="china-s", fontsize=10)
    pdf.save(path)
    pdf.close()
    return path


def test_fake_bold_heading_in_a_wide_font_is_collapsed(tmp_path: Path) -> None:
    doc = load(_write(tmp_path / "bold.pdf", [PARAS[:1]], fake_bold=True), ExtractConfig(ocr="never"))
    (block,) = [b for b in doc.pages[0].blocks if HEADING in b.text]
    # The extractor gives the four copies as four lines of one block, one line tall.
    assert block.text.split("\n") == [HEADING] * 4
    result = Repeats()(doc)
    assert result.document.text.count(HEADING) == 1
    assert PARAS[0].split()[0] in result.document.text
    assert any(c.code == "repeats.fake_bold" and c.reason.startswith("repeated 4x") for c in result.changes)


@pytest.mark.parametrize("font_em", [0.5, 1.0])
def test_copies_side_by_side_are_not_overprint(font_em: float) -> None:
    # Four copies in a one-line box: drawn over each other when the box holds
    # one copy (in a narrow or a wide font), a row of cells when it holds four.
    size = 13.0
    one = len(HEADING) * font_em * size
    text = "\n".join([HEADING] * 4)
    over = Block(text, bbox=BBox(56, 70, 56 + one + 0.6, 86), font_size=size)
    row = Block(text, bbox=BBox(56, 100, 56 + 4 * one + 30, 116), font_size=size)
    out = Repeats()(Document(pages=(Page(1, (over, row)),))).document.pages[0].blocks
    assert [b.text for b in out] == [HEADING, text]


def test_repeated_paragraph_inside_a_multi_paragraph_block_is_removed(tmp_path: Path) -> None:
    path = _write(tmp_path / "paras.pdf", [PARAS, [PARAS[1], "A closing remark that is new on this page."]])
    config = Config(stages=("normalize", "reflow", "neardup"), extract=ExtractConfig(ocr="never"))
    result = clean_file(path, config)
    # Precondition: the first page's paragraphs arrive as one block.
    assert any(all(p.split()[0] in b.text for p in PARAS) for b in result.original.pages[0].blocks)
    text = " ".join(result.text.split())
    for para in PARAS:
        assert text.count(para) == 1, para
    assert "A closing remark that is new on this page." in text
    (change,) = result.report.stage("neardup").changes
    assert change.page == 2 and " ".join(change.text.split()) == PARAS[1]
