"""Set a bench/repetition_docs.py document in lines on A5 pages, and write it as a PDF and as a text file.

The text flows from page to page like a word processor's: a paragraph (or a
copy) that reaches the page end continues on the next page, under that
page's running head, so page breaks fall inside paragraphs and copies. Tables
are not split. The PDF draws each line with PyMuPDF (Helvetica, or the
built-in ``china-s`` font for Chinese), the table with ruled cells so the
extractor's table finder sees it, the running head and the footer in 8 pt in
the page's top and bottom bands. The text version is what a PDF-to-text tool
writes: the same lines, pages separated by form feeds, the head first and the
footer and page number last on each page.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pymupdf
import regex

from bench.repetition_docs import BenchDocument, Item

WIDTH, HEIGHT = 420.0, 595.0  # A5 in points
MARGIN = 42.0
BODY_TOP, BODY_BOTTOM = 60.0, HEIGHT - 62.0
SIZE, HEADING_SIZE, SMALL = 10.0, 12.0, 8.0
LINE = 1.5 * SIZE
PARAGRAPH_GAP = 0.8 * SIZE
CELL_PAD = 3.0
COLUMNS = (0.22, 0.78)  # the table's column widths, as shares of the body width
# A Latin word, a number or a CJK character: what a line may not be broken inside of.
_TOKEN = regex.compile(r"[^\s\p{Han}\u3000-\u303f\uff00-\uffef]+|\s+|.")


@dataclass(slots=True)
class Placed:
    """Something drawn on a page: a line of text, or a table (its rows of wrapped cell lines)."""

    kind: str  # "line" | "heading" | "table" | "gap"
    y: float
    text: str = ""
    rows: list[tuple[list[str], ...]] = field(default_factory=list)
    cells: tuple[tuple[str, ...], ...] = ()
    heights: list[float] = field(default_factory=list)


@dataclass(slots=True)
class LaidOut:
    pages: list[list[Placed]]
    # Paragraphs of the ideal text that a page break cut in two.
    cut: list[str]

    @property
    def page_count(self) -> int:
        return len(self.pages)


@cache
def _fonts(lang: str) -> tuple[pymupdf.Font, str, pymupdf.Font, str]:
    """Body and heading fonts with the names pages know them by.

    Chinese is set in PyMuPDF's Droid Sans Fallback, embedded (see write_pdf):
    the non-embedded ``china-s`` resource prints Latin letters and digits a
    full em wide while its metrics say otherwise, so lines ran off the page.
    """
    if lang == "zh":
        font = pymupdf.Font("china-s")
        return font, "droid", font, "droid"
    return pymupdf.Font("helv"), "helv", pymupdf.Font("hebo"), "hebo"


def wrap(text: str, font: pymupdf.Font, size: float, width: float) -> list[str]:
    """Greedy line breaking at spaces and between CJK characters."""
    lines: list[str] = []
    current, used = "", 0.0
    for token in _TOKEN.findall(text):
        w = _text_width(font, token, size)
        if current and used + (0.0 if token.isspace() else w) > width:
            lines.append(current.rstrip())
            current, used = ("", 0.0) if token.isspace() else (token, w)
        else:
            current, used = current + token, used + w
    if current.strip():
        lines.append(current.rstrip())
    return lines


_ADVANCES: dict[tuple[str, str], float] = {}


def _text_width(font: pymupdf.Font, text: str, size: float) -> float:
    """Width in points; glyph advances cached (MuPDF's text_length costs microseconds per character)."""
    total = 0.0
    for ch in text:
        key = (font.name, ch)
        if key not in _ADVANCES:
            _ADVANCES[key] = font.text_length(ch, 1.0)
        total += _ADVANCES[key]
    return total * size


def lay_out(doc: BenchDocument) -> LaidOut:
    font, _, bold, _ = _fonts(doc.lang)
    body_width = WIDTH - 2 * MARGIN
    pages: list[list[Placed]] = [[]]
    y = BODY_TOP
    cut: list[str] = []
    ideal_paragraphs = set(doc.paragraphs)

    def new_page() -> None:
        nonlocal y
        pages.append([])
        y = BODY_TOP

    for item in doc.items:
        if item.kind == "table":
            rows, heights = _table_rows(item, font, body_width)
            if y + sum(heights) > BODY_BOTTOM:
                new_page()
            pages[-1].append(Placed("table", y, rows=rows, cells=item.rows, heights=heights))
            pages[-1].append(Placed("gap", y))
            y += sum(heights) + PARAGRAPH_GAP
            continue
        heading = item.kind == "heading"
        size = HEADING_SIZE if heading else SIZE
        lines = wrap(item.text, bold if heading else font, size, body_width)
        if heading and y + 3 * LINE > BODY_BOTTOM:
            new_page()  # a heading does not end a page
        first_page = len(pages)
        for line in lines:
            if y + LINE > BODY_BOTTOM:
                new_page()
            pages[-1].append(Placed("heading" if heading else "line", y, line))
            y += LINE
        if len(pages) != first_page and item.text in ideal_paragraphs:
            cut.append(item.text)
        pages[-1].append(Placed("gap", y))
        y += PARAGRAPH_GAP
    return LaidOut(pages, cut)


def _table_rows(item: Item, font: pymupdf.Font, body_width: float) -> tuple[list[tuple[list[str], ...]], list[float]]:
    rows, heights = [], []
    for row in item.rows:
        cells = tuple(
            wrap(text, font, SIZE, share * body_width - 2 * CELL_PAD) for text, share in zip(row, COLUMNS, strict=True)
        )
        rows.append(cells)
        heights.append(max(len(c) for c in cells) * LINE + 2 * CELL_PAD)
    return rows, heights


def write_pdf(doc: BenchDocument, laid: LaidOut, path: Path) -> Path:
    _, fontname, _, boldname = _fonts(doc.lang)
    pdf = pymupdf.open()
    body_width = WIDTH - 2 * MARGIN
    for index, placed in enumerate(laid.pages):
        page = pdf.new_page(width=WIDTH, height=HEIGHT)
        if fontname == "droid":
            page.insert_font(fontname="droid", fontbuffer=_fonts(doc.lang)[0].buffer)
        number = index + 1
        odd = number % 2 == 1
        fur = doc.furniture
        head_x = MARGIN if odd or not fur.odd_head else WIDTH - MARGIN - _width(fur.head_on(number), doc.lang, SMALL)
        page.insert_text((head_x, 34), fur.head_on(number), fontname=fontname, fontsize=SMALL)
        if fur.footer:
            page.insert_text((MARGIN, HEIGHT - 24), fur.footer, fontname=fontname, fontsize=SMALL)
        label = fur.number_on(index, laid.page_count)
        w = _width(label, doc.lang, SMALL)
        if fur.odd_head:  # a book layout: the number at the outer corner
            x = WIDTH - MARGIN - w if odd else MARGIN
        else:
            x = (WIDTH - w) / 2 if not fur.footer else WIDTH - MARGIN - w
        page.insert_text((x, HEIGHT - 24), label, fontname=fontname, fontsize=SMALL)
        for p in placed:
            if p.kind in ("line", "heading"):
                size = HEADING_SIZE if p.kind == "heading" else SIZE
                page.insert_text(
                    (MARGIN, p.y + size), p.text, fontname=boldname if p.kind == "heading" else fontname, fontsize=size
                )
            elif p.kind == "table":
                _draw_table(page, p, fontname, body_width)
    pdf.subset_fonts()
    pdf.save(path, garbage=3, deflate=True)
    pdf.close()
    return path


def _width(text: str, lang: str, size: float) -> float:
    return _text_width(_fonts(lang)[0], text, size)


def _draw_table(page: pymupdf.Page, placed: Placed, fontname: str, body_width: float) -> None:
    y = placed.y
    edges = [MARGIN]
    for share in COLUMNS:
        edges.append(edges[-1] + share * body_width)
    for cells, height in zip(placed.rows, placed.heights, strict=True):
        for (x0, x1), lines in zip(itertools.pairwise(edges), cells, strict=True):
            page.draw_rect(pymupdf.Rect(x0, y, x1, y + height), color=(0, 0, 0), width=0.5)
            for k, line in enumerate(lines):
                at = (x0 + CELL_PAD, y + CELL_PAD + k * LINE + SIZE)
                page.insert_text(at, line, fontname=fontname, fontsize=SIZE)
        y += height


def write_text(doc: BenchDocument, laid: LaidOut) -> str:
    """The same lines as text: head, body (blank lines between paragraphs), footer, page number; form feeds."""
    pages = []
    for index, placed in enumerate(laid.pages):
        fur = doc.furniture
        lines = [fur.head_on(index + 1), ""]
        for p in placed:
            if p.kind == "gap":
                if lines[-1] != "":
                    lines.append("")
            elif p.kind == "table":
                lines += ["| " + " | ".join(row) + " |" for row in p.cells]
            else:
                lines.append(p.text)
        if lines[-1] != "":
            lines.append("")
        if fur.footer:
            lines.append(fur.footer)
        lines.append(fur.number_on(index, laid.page_count))
        pages.append("\n".join(lines))
    return "\x0c".join(pages) + "\n"
