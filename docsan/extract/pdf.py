"""PDF extraction with PyMuPDF: blocks with positions and font sizes."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.model import BBox, Block, Document, DocumentKind, Page, Source


def open_pdf(path: Path) -> pymupdf.Document:
    """Open ``path`` or raise an InputError that says what is wrong with it."""
    name = str(path)
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except pymupdf.EmptyFileError:
        raise InputError(name, "empty file") from None
    except (pymupdf.FileDataError, RuntimeError, ValueError):
        raise InputError(name, "not a PDF or damaged beyond repair") from None
    if doc.needs_pass:
        raise InputError(name, "encrypted PDF (a password is needed to open it)")
    try:
        count = doc.page_count
    except RuntimeError as err:
        raise InputError(name, f"damaged PDF: {err}") from None
    if count == 0:
        raise InputError(name, "PDF has no pages")
    return doc


def _page_blocks(page: pymupdf.Page) -> list[Block]:
    blocks = []
    data = page.get_text("dict", flags=pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP)
    for b in data["blocks"]:
        if b.get("type") != 0:
            continue
        lines = []
        size = 0.0
        for line in b["lines"]:
            lines.append("".join(s["text"] for s in line["spans"]))
            size = max([size] + [s["size"] for s in line["spans"]])
        text = "\n".join(lines)
        if text.strip():
            blocks.append(Block(text, source=Source.TEXT_LAYER, bbox=BBox(*b["bbox"]), font_size=size))
    return blocks


def load_pdf(path: Path, config: ExtractConfig) -> Document:
    doc = open_pdf(path)
    name = str(path)
    if doc.page_count > config.max_pages:
        raise InputError(name, f"{doc.page_count} pages, more than the limit of {config.max_pages}")
    pages = []
    with doc:
        for page in doc:
            rect = page.rect
            pages.append(
                Page(number=page.number + 1, blocks=tuple(_page_blocks(page)), width=rect.width, height=rect.height)
            )
    return Document(pages=tuple(pages), kind=DocumentKind.PDF, name=name)
