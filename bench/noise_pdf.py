"""The same noisy document as a PDF, for the tools that read PDFs (bench/quality.py).

Page furniture is where a real report has it: the running header in the top
band, footer and page number in the bottom band; a fake-bold heading is
overprinted four times with a fraction of a point's offset, the way the
annual-report cover in the corpus is drawn. Chinese text uses PyMuPDF's
built-in ``china-s`` font. The invisible characters of the text version are
left out (a PDF's text layer does not carry them the same way), so their
checks are dropped for the PDF.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pymupdf

from bench.noise import CHAR_KINDS, NoisyDocument

WIDTH, HEIGHT = 595, 842  # A4 in points
MARGIN = 56
FONT_SIZE = 10
BODY_TOP = 70.0
PARAGRAPH_GAP = 8.0


def _font(doc: NoisyDocument) -> str:
    return "china-s"


def _draw_body(page: pymupdf.Page, body: list[str], headings: set[str], font: str, y: float) -> float:
    """Draw a page body from ``y`` down, one text box per paragraph; returns where it ended."""
    for para in body:
        heading = next((h for h in headings if para in ("\n".join([h] * 4), h * 3)), None)
        if heading is not None:
            for k in range(4):  # fake bold: the same line drawn four times, offset by 0.2 pt
                page.insert_text((MARGIN + 0.2 * k, y + 12), heading, fontname=font, fontsize=13)
            y += 24
            continue
        rect = pymupdf.Rect(MARGIN, y, WIDTH - MARGIN, page.rect.height)
        left = page.insert_textbox(rect, para, fontname=font, fontsize=FONT_SIZE)
        y += rect.height - left + PARAGRAPH_GAP
    return y


def write_pdf(doc: NoisyDocument, path: Path) -> Path:
    """Render ``doc`` (its page bodies and style) to ``path``.

    A page is A4, or taller when its body (repeats pile up on later pages)
    needs it: measured first on a scratch page, so nothing is cut off.
    """
    font = _font(doc)
    headings = set(doc.style.headings)
    scratch = pymupdf.open()
    pdf = pymupdf.open()
    for number, body in enumerate(doc.bodies, start=1):
        end = _draw_body(scratch.new_page(width=WIDTH, height=20_000), body, headings, font, BODY_TOP)
        height = max(HEIGHT, end + 60)
        page = pdf.new_page(width=WIDTH, height=height)
        page.insert_text((MARGIN, 36), doc.style.header, fontname=font, fontsize=8)
        page.insert_text((MARGIN, height - 30), doc.style.footer, fontname=font, fontsize=8)
        page_no = doc.style.page_number.format(page=number, pages=len(doc.bodies))
        page.insert_text((WIDTH - MARGIN - 90, height - 30), page_no, fontname=font, fontsize=8)
        _draw_body(page, body, headings, font, BODY_TOP)
    pdf.save(path)
    pdf.close()
    scratch.close()
    return path


def pdf_version(doc: NoisyDocument) -> NoisyDocument:
    """``doc`` with the checks that a PDF rendering can be scored on (no invisible characters)."""
    dropped = {*CHAR_KINDS, "tag"}
    return dataclasses.replace(
        doc, name=doc.name.replace("-noisy", "-noisy-pdf"), checks=[c for c in doc.checks if c.kind not in dropped]
    )
