"""PDF extraction: text layer with positions, tables, OCR where the text layer fails.

Per page, in this order (docs/extraction.md explains each decision):

1. one text pass (``layout.read_page``): visible text boxes, invisible text
   (render mode 3 / alpha 0), white-on-white text, ruling lines;
2. a scanned page's hidden OCR layer is its text; other invisible text is
   dropped and counted in ``Document.notes``;
3. the text is scored (``textlayer_quality``); a page whose text is garbage,
   or that has no text but is covered by images, is OCR'd (``ocr``);
4. on text pages with ruling lines, ruled tables become table blocks and
   their text leaves the loose text (``tables``);
5. reading order by XY-cut, headings by font size against the document's body size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.extract import layout, textlayer_quality
from docsan.extract.layout import PageText, TextBox
from docsan.extract.mupdf import pymupdf
from docsan.geometry import Rect
from docsan.model import BBox, Block, BlockKind, Change, ChangeKind, Document, DocumentKind, Page, Source
from docsan.render import table_text
from docsan.report import ChangeCode
from docsan.tables import ruled

HIDDEN_TEXT = ChangeCode(
    "extract.hidden_text",
    ChangeKind.REMOVED,
    "text drawn invisibly (render mode 3 or alpha 0) on a page that is not a scan",
)
WHITE_TEXT = ChangeCode("extract.white_text", ChangeKind.REMOVED, "white text on the white page")
TEXT_LAYER_REPLACED = ChangeCode(
    "extract.text_layer_replaced",
    ChangeKind.REMOVED,
    "a page's text layer set aside (garbage, or OCR forced): replaced by OCR, or by nothing when OCR is off or fails",
)
OCR_GIVEN_UP = ChangeCode(
    "extract.ocr_given_up", ChangeKind.REMOVED, "a page OCR gave up on (time or size limit), left empty"
)

# A page counts as a scan when images cover at least this share of it (all
# images together: some scanners slice a page into dozens of strips).
SCAN_COVERAGE = 0.5


def open_pdf(path: Path) -> pymupdf.Document:
    """Open ``path`` or raise an InputError that says what is wrong with it.

    A document whose page tree is damaged (``page_count`` itself fails) is
    returned open; :func:`load_pdf` then reads it with pdfplumber.
    """
    name = str(path)
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except pymupdf.EmptyFileError:
        raise InputError(name, "empty file") from None
    except (pymupdf.FileDataError, RuntimeError, ValueError):
        raise InputError(name, "not a PDF or damaged beyond repair") from None
    if doc.needs_pass:
        raise InputError(name, "encrypted PDF (a password is needed to open it)")
    return doc


def _page_count(doc: pymupdf.Document) -> int | None:
    try:
        return doc.page_count
    except RuntimeError:
        return None


def load_pdf(path: Path, config: ExtractConfig, *, pages: Iterable[int] | None = None) -> Document:
    """Extract ``path``; ``pages`` (1-based numbers) limits the work to those pages."""
    name = str(path)
    doc = open_pdf(path)
    notes: list[str] = []
    with doc:
        count = _page_count(doc)
        if count is None:
            return _load_with_pdfplumber(path, config, pages)
        if count == 0:
            raise InputError(name, "PDF has no pages")
        if count > config.max_pages:
            raise InputError(name, f"{count} pages, more than the limit of {config.max_pages}")
        if doc.is_repaired:
            notes.append("the PDF's cross-reference table was damaged; PyMuPDF repaired it")
        wanted = sorted(set(pages)) if pages is not None else range(1, count + 1)
        drafts = [_extract_page(doc[n - 1], config) for n in wanted if 1 <= n <= count]
    body = layout.body_size([b for d in drafts for b in d.boxes()])
    return Document(
        pages=tuple(d.page(body) for d in drafts),
        kind=DocumentKind.PDF,
        name=name,
        notes=(*notes, *(note for d in drafts for note in d.notes)),
        extraction=tuple(c for d in drafts for c in d.removed),
    )


# Characters a page needs before its own body size counts (a cover page's few
# large words are not body text).
PAGE_BODY_MIN_CHARS = 100


@dataclass(slots=True)
class _Draft:
    """A page before headings are marked (they need the whole document's body size)."""

    number: int
    width: float
    height: float
    items: list[TextBox | Block] = field(default_factory=list)
    source: Source = Source.TEXT_LAYER
    ocr: bool = False
    notes: list[str] = field(default_factory=list)
    # What extraction left out of this page, with the text.
    removed: list[Change] = field(default_factory=list)

    def boxes(self) -> list[TextBox]:
        return [it for it in self.items if isinstance(it, TextBox)] if self.source is Source.TEXT_LAYER else []

    def page(self, body: float | None) -> Page:
        # A page of prose in a document dominated by small table print (zh_dbdq: 14 pt text, 9 pt
        # tables) would otherwise be all "headings": a heading must also stand out on its own page.
        boxes = self.boxes()
        if body is not None and sum(b.chars for b in boxes) >= PAGE_BODY_MIN_CHARS:
            body = max(body, layout.body_size(boxes) or body)
        blocks = []
        for it in self.items:
            if isinstance(it, Block):
                blocks.append(it)
                continue
            heading = self.source is Source.TEXT_LAYER and layout.is_heading(it, body)
            kind = BlockKind.HEADING if heading else BlockKind.TEXT
            blocks.append(Block(it.text, kind=kind, source=self.source, bbox=BBox(*it.bbox), font_size=it.size))
        return Page(self.number, tuple(blocks), width=self.width, height=self.height, ocr=self.ocr)


def _image_rects(page: pymupdf.Page) -> list[Rect]:
    return [tuple(info["bbox"]) for info in page.get_image_info()]  # type: ignore[misc]


def _image_coverage(page: pymupdf.Page) -> float:
    """Share of the page covered by images (overlaps counted twice, capped at 1)."""
    area = abs(page.rect)
    if not area:
        return 0.0
    covered = sum(abs(pymupdf.Rect(r) & page.rect) for r in _image_rects(page))
    return min(1.0, covered / area)


def _extract_page(page: pymupdf.Page, config: ExtractConfig) -> _Draft:
    number = page.number + 1
    draft = _Draft(number, page.rect.width, page.rect.height)
    found = layout.read_page(
        page,
        # Under white text: a page without image resources skips the image
        # pass (it costs a second interpretation of the page).
        lambda: _image_rects(page) if page.get_images() else [],
        lambda pt: config.tables and ruled.plausible(pt.rules_h, pt.rules_v),
    )
    boxes = list(found.visible)
    coverage: float | None = None
    if found.hidden:
        coverage = _image_coverage(page)
        if coverage >= SCAN_COVERAGE and found.hidden_chars >= found.visible_chars:
            # The invisible text over a scan is its OCR layer: the page's real text.
            boxes += found.hidden
            draft.source, draft.ocr = Source.OCR, True
        else:
            hidden = "\n".join(b.text for b in found.hidden)
            reason = f"dropped {found.hidden_chars} characters of invisible text"
            draft.removed.append(HIDDEN_TEXT.change(reason, number, hidden))
    if found.white_chars:
        reason = f"dropped {found.white_chars} characters of white-on-white text"
        draft.removed.append(WHITE_TEXT.change(reason, number, "\n".join(found.white)))
    text = "\n".join(b.text for b in boxes)
    quality = textlayer_quality.assess(text)
    if config.ocr == "always":
        reason = "OCR forced"
    elif quality.garbage:
        reason = f"text layer is garbage ({quality.describe()})"
    elif not text.strip():
        if coverage is None:
            coverage = _image_coverage(page)
        reason = "no text layer" if coverage >= SCAN_COVERAGE else ""
    else:
        reason = ""
    if reason:
        return _ocr_draft(page, draft, config, reason, text)
    if config.tables and ruled.plausible(found.rules_h, found.rules_v):
        boxes = _with_tables(found, boxes, draft)
    draft.items = layout.reading_order([*boxes, *draft.items], _bbox_of)
    return draft


def _ocr_draft(page: pymupdf.Page, draft: _Draft, config: ExtractConfig, reason: str, layer: str) -> _Draft:
    """OCR the page instead of its text layer ``layer`` (set aside for ``reason``); empty when OCR is off."""
    number = draft.number
    if config.ocr == "never":
        draft.notes.append(f"page {number}: {reason}; OCR is off, page left empty")
        if layer.strip():
            draft.removed.append(TEXT_LAYER_REPLACED.change(f"{reason}; OCR is off, page left empty", number, layer))
        return draft
    from docsan.extract.ocr import ocr_page

    result = ocr_page(page, config)
    draft.notes.append(f"page {number}: {reason}; OCR'd ({config.lang})")
    draft.notes.extend(result.notes)
    if layer.strip():
        draft.removed.append(TEXT_LAYER_REPLACED.change(f"{reason}; replaced by OCR", number, layer))
    if result.given_up:
        draft.removed.append(OCR_GIVEN_UP.change(result.given_up, number, ""))
    draft.items, draft.source, draft.ocr = list(result.blocks), Source.OCR, True
    return draft


def _bbox_of(item: TextBox | Block) -> Rect:
    if isinstance(item, TextBox):
        return item.bbox
    b = item.bbox
    assert b is not None  # table blocks always carry their box
    return (b.x0, b.y0, b.x1, b.y1)


def _inside(line: layout.Line, rect: Rect) -> bool:
    cx, cy = (line.bbox[0] + line.bbox[2]) / 2, (line.bbox[1] + line.bbox[3]) / 2
    return rect[0] <= cx <= rect[2] and rect[1] <= cy <= rect[3]


def _with_tables(found: PageText, boxes: list[TextBox], draft: _Draft) -> list[TextBox]:
    """Add table blocks to ``draft``; return ``boxes`` less the lines now inside a table."""
    rects: list[Rect] = []
    for grid in ruled.find_grids(found.rules_h, found.rules_v, found.spans):
        x0, y0, x1, y1 = grid.bbox
        inside = [sp for sp in found.spans if sp.bbox[0] < x1 and sp.bbox[2] > x0 and y0 <= sp.line_y <= y1]
        table = ruled.fill(grid, inside)
        text = table_text(table)
        if not text.replace("|", "").strip():
            continue  # a ruled frame with no text: a form or a decoration, not a table
        rects.append(grid.bbox)
        draft.items.append(
            Block(text, kind=BlockKind.TABLE, source=Source.TABLE_EXTRACTOR, bbox=BBox(*grid.bbox), table=table)
        )
    if not rects:
        return boxes
    kept = (b.without(lambda ln: any(_inside(ln, r) for r in rects)) for b in boxes)
    return [b for b in kept if b is not None]


def _load_with_pdfplumber(path: Path, config: ExtractConfig, pages: Sequence[int] | Iterable[int] | None) -> Document:
    """Fallback for a page tree PyMuPDF cannot count (``/Count 9999999999``)."""
    import pdfplumber
    from pdfminer.pdfparser import PDFSyntaxError

    from docsan.text.paragraphs import paragraphs_to_blocks

    name = str(path)
    wanted = set(pages) if pages is not None else None
    out = []
    try:
        with pdfplumber.open(path) as pdf:
            if len(pdf.pages) > config.max_pages:
                raise InputError(name, f"{len(pdf.pages)} pages, more than the limit of {config.max_pages}")
            for i, p in enumerate(pdf.pages, start=1):
                if wanted is not None and i not in wanted:
                    continue
                blocks = paragraphs_to_blocks(p.extract_text() or "", Source.TEXT_LAYER)
                out.append(Page(i, tuple(blocks), width=float(p.width), height=float(p.height)))
    except (PDFSyntaxError, ValueError, KeyError, TypeError) as err:
        raise InputError(name, f"damaged PDF: page tree unreadable ({type(err).__name__})") from None
    if not out:
        raise InputError(name, "damaged PDF: no readable pages")
    note = f"PyMuPDF could not read the page tree; read {len(out)} page(s) with pdfplumber (no OCR, no tables)"
    return Document(pages=tuple(out), kind=DocumentKind.PDF, name=name, notes=(note,))
