"""PDF extraction: text layer with positions, tables, OCR where the text layer fails.

Per page, in this order (docs/extraction.md explains each decision):

1. one text pass (``layout.read_page``): visible text boxes, invisible text
   (render mode 3 / alpha 0), white-on-white text, ruling lines;
2. a scanned page's hidden OCR layer is its text; other invisible text is
   dropped and recorded with its text in ``Document.extraction``;
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

from docsan.config import ExtractConfig, page_spans
from docsan.errors import InputError
from docsan.extract import layout, textlayer_quality
from docsan.extract.content_size import MIB, decoded_size
from docsan.extract.layout import PageText, TextBox
from docsan.extract.mupdf import colour_management, pymupdf
from docsan.geometry import Rect
from docsan.model import BBox, Block, BlockKind, Change, ChangeKind, Document, DocumentKind, Gap, Page, Source
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
ACTUAL_TEXT = ChangeCode(
    "extract.actual_text",
    ChangeKind.FINDING,
    "a tagged PDF's /ActualText that replaces no drawn glyph (a figure's words), kept as the page's text",
)

# A page counts as a scan when images cover at least this share of it (all
# images together: some scanners slice a page into dozens of strips).
SCAN_COVERAGE = 0.5
# A scan's invisible OCR layer with more bad tokens than this is re-read by tesseract (the memo
# scan's layer, "«POAH «3E*»CM", has 5%; a usable noisy Chinese layer, zh_feida, 0.2%).
SCAN_LAYER_MAX_BAD = 0.03
# OCR replaces a garbage text layer only when its score (textlayer_quality.Quality.score) is
# higher by this much: a tie keeps the text the PDF itself holds.
OCR_MARGIN = 0.1


PdfSource = Path | bytes
# MuPDF's own exception base (a damaged object, a cycle in the page tree): PyMuPDF lets it through.
_MUPDF_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase)


def open_pdf(source: PdfSource, name: str | None = None) -> pymupdf.Document:
    """Open ``source`` (a path, or the bytes of standard input) or raise an InputError saying what is wrong.

    A document whose page tree is damaged (``page_count`` itself fails) is
    returned open; :func:`load_pdf` then reads it with pdfplumber.
    """
    name = name or str(source)
    try:
        if isinstance(source, bytes):
            doc = pymupdf.open(stream=source, filetype="pdf")
        else:
            doc = pymupdf.open(source, filetype="pdf")
    except pymupdf.EmptyFileError:
        raise InputError(name, "empty file") from None
    except (pymupdf.FileDataError, *_MUPDF_ERRORS):
        raise InputError(name, "not a PDF or damaged beyond repair") from None
    if doc.needs_pass:
        raise InputError(name, "encrypted PDF (a password is needed to open it)")
    return doc


def _page_count(doc: pymupdf.Document) -> int | None:
    try:
        return doc.page_count
    except _MUPDF_ERRORS:
        return None


def load_pdf(
    source: PdfSource, config: ExtractConfig, *, pages: Iterable[int] | None = None, name: str | None = None
) -> Document:
    """Extract ``source`` (a path or PDF bytes); ``pages`` (1-based numbers) limits the work to those pages.

    Without ``pages``, ``config.pages`` (``--pages``) chooses them. Pages past
    ``config.max_pages`` are not read, and a page MuPDF cannot load (a cycle in
    the page tree) is skipped: both are gaps of a partial result, not a refusal.
    """
    name = name or str(source)
    doc = open_pdf(source, name)
    notes: list[str] = []
    gaps: list[Gap] = []
    with doc:
        count = _page_count(doc)
        if count is None:
            return _load_with_pdfplumber(source, name, config, pages)
        if count == 0:
            raise InputError(name, "PDF has no pages")
        if doc.is_repaired:
            notes.append("the PDF's cross-reference table was damaged; PyMuPDF repaired it")
        wanted = _wanted_pages(count, pages, config, gaps, name)
        drafts = []
        for n in wanted:
            try:
                page = doc[n - 1]
            except _MUPDF_ERRORS as err:
                gaps.append(Gap(n, f"unreadable ({_mupdf_message(err)})"))
                continue
            drawings = _content_check(doc, page, config, notes, gaps)
            if drawings is not None:
                drafts.append(_extract_page(page, config, gaps, drawings=drawings))
    if not drafts:
        # Every wanted page is a gap: nothing is left to call a partial result.
        raise InputError(name, f"no page could be read (page {gaps[0].page}: {gaps[0].reason})")
    body = layout.body_size([b for d in drafts for b in d.boxes()])
    return Document(
        pages=tuple(d.page(body) for d in drafts),
        kind=DocumentKind.PDF,
        name=name,
        notes=(*notes, *(note for d in drafts for note in d.notes)),
        gaps=tuple(gaps),
        extraction=tuple(c for d in drafts for c in d.removed),
    )


def _content_check(
    doc: pymupdf.Document, page: pymupdf.Page, config: ExtractConfig, notes: list[str], gaps: list[Gap]
) -> bool | None:
    """Whether to read ``page`` with its drawings (True), without them (False), or not at all (None, a gap)."""
    number = page.number + 1
    limit = int(config.max_page_content_mib * MIB)
    size = decoded_size(doc, page, limit)
    if size > limit:
        gaps.append(
            Gap(
                number,
                f"content decodes to more than {config.max_page_content_mib:g} MiB "
                "(max_page_content_mib): page not read",
            )
        )
        return None
    if size > config.page_drawings_mib * MIB:
        notes.append(
            f"page {number}: {size / MIB:.2f} MiB of content, over page_drawings_mib "
            f"({config.page_drawings_mib:g}): read without its drawings (no ruled tables)"
        )
        return False
    return True


def _mupdf_message(err: BaseException) -> str:
    # "code=7: cycle in page tree" -> "cycle in page tree"
    return str(err).split(": ", 1)[-1].strip() or type(err).__name__


def _wanted_pages(
    count: int, pages: Iterable[int] | None, config: ExtractConfig, gaps: list[Gap], name: str
) -> list[int]:
    """The page numbers to read: ``pages``, else ``config.pages``, else all, cut at ``config.max_pages``."""
    if pages is not None:
        wanted = sorted({n for n in pages if 1 <= n <= count})
    elif config.pages is not None:
        wanted = parse_page_ranges(config.pages, count, name)
    else:
        wanted = list(range(1, count + 1))
    if len(wanted) > config.max_pages:
        first, last = wanted[config.max_pages], wanted[-1]
        gaps.append(
            Gap(
                None,
                f"pages {first}-{last} not read: over the max_pages limit of {config.max_pages} "
                f"(read them with --pages {first}-{last})",
            )
        )
        wanted = wanted[: config.max_pages]
    return wanted


def parse_page_ranges(spec: str, count: int, name: str) -> list[int]:
    """``"1-3,7,10-"`` to sorted page numbers within 1..count (ExtractConfig checked its syntax)."""
    out: set[int] = set()
    for lo, hi in page_spans(spec):
        out.update(range(lo, min(hi if hi is not None else count, count) + 1))
    if not out:
        raise InputError(name, f"--pages {spec} selects no page of this {count}-page PDF")
    return sorted(out)


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
    # What extraction left out of this page (or found on it), with the text.
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
    # get_image_info is a text pass too (its TextPage converts every text colour): boxes need no ICC.
    with colour_management(False):
        info = page.get_image_info()
    return [tuple(i["bbox"]) for i in info]  # type: ignore[misc]


def _image_coverage(page: pymupdf.Page) -> float:
    """Share of the page covered by images (overlaps counted twice, capped at 1)."""
    area = abs(page.rect)
    if not area:
        return 0.0
    covered = sum(abs(pymupdf.Rect(r) & page.rect) for r in _image_rects(page))
    return min(1.0, covered / area)


def _extract_page(page: pymupdf.Page, config: ExtractConfig, gaps: list[Gap], *, drawings: bool = True) -> _Draft:
    number = page.number + 1
    draft = _Draft(number, page.rect.width, page.rect.height)
    found = layout.read_page(
        page,
        # Under white text: a page without image resources skips the image
        # pass (it costs a second interpretation of the page).
        lambda: _image_rects(page) if page.get_images() else [],
        lambda pt: config.tables and ruled.plausible(pt.rules_h, pt.rules_v),
        drawings=drawings,
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
    for text in found.actual_text:
        draft.removed.append(ACTUAL_TEXT.change("kept the /ActualText of a figure (no glyphs drawn)", number, text))
    text = "\n".join(b.text for b in boxes)
    quality = textlayer_quality.assess(text)
    # A scan's own OCR layer is judged more strictly: tesseract reading the image is a fair rival.
    poor = quality.garbage or (draft.source is Source.OCR and quality.bad_share > SCAN_LAYER_MAX_BAD)
    if config.ocr == "always":
        reason = "OCR forced"
    elif poor:
        reason = f"text layer is garbage ({quality.describe()})"
    elif not text.strip():
        if coverage is None:
            coverage = _image_coverage(page)
        reason = "no text layer" if coverage >= SCAN_COVERAGE else ""
    else:
        reason = ""
    if reason and config.ocr == "never":
        draft.notes.append(f"page {number}: {reason}; OCR is off, page left empty")
        if text.strip():
            draft.removed.append(TEXT_LAYER_REPLACED.change(f"{reason}; OCR is off, page left empty", number, text))
        gaps.append(Gap(number, f"{reason}, and OCR is off (--no-ocr): page left empty"))
        return draft
    if reason:
        from docsan.extract.ocr import ocr_page

        result = ocr_page(page, config)
        if not poor or config.ocr == "always" or _reads_better(result.blocks, quality):
            draft.notes.append(f"page {number}: {reason}; OCR'd ({result.lang})")
            draft.notes.extend(result.notes)
            if text.strip():
                draft.removed.append(TEXT_LAYER_REPLACED.change(f"{reason}; replaced by OCR", number, text))
            for gap in result.gaps:
                draft.removed.append(OCR_GIVEN_UP.change(gap.reason, number, ""))
            gaps.extend(result.gaps)
            draft.items, draft.source, draft.ocr = list(result.blocks), Source.OCR, True
            return draft
        # OCR replaces a text layer only when it reads demonstrably better.
        draft.notes.append(f"page {number}: {reason}; OCR ({result.lang}) read no better, text layer kept")
    if config.tables and ruled.plausible(found.rules_h, found.rules_v):
        boxes = _with_tables(found, boxes, draft)
    draft.items = layout.reading_order([*boxes, *draft.items], _bbox_of)
    return draft


def _reads_better(blocks: Sequence[Block], layer: textlayer_quality.Quality) -> bool:
    ocr = textlayer_quality.assess("\n".join(b.text for b in blocks))
    return ocr.score > layer.score + OCR_MARGIN


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
    kept = []
    for box in boxes:
        # A line's centre lies in its box: a box inside a table loses every line, a box clear of
        # every table keeps them all. Only the few boxes across a table's edge (21 of the corpus's
        # 4,688 on table pages; 4,161 lie inside one) are cut line by line.
        x0, y0, x1, y1 = box.bbox
        if any(r[0] <= x0 and x1 <= r[2] and r[1] <= y0 and y1 <= r[3] for r in rects):
            continue
        if any(x0 <= r[2] and r[0] <= x1 and y0 <= r[3] and r[1] <= y1 for r in rects):
            cut = box.without(lambda ln: any(_inside(ln, r) for r in rects))
            if cut is not None:
                kept.append(cut)
        else:
            kept.append(box)
    return kept


def _load_with_pdfplumber(
    source: PdfSource, name: str, config: ExtractConfig, pages: Sequence[int] | Iterable[int] | None
) -> Document:
    """Fallback for a page tree PyMuPDF cannot count (``/Count 9999999999``)."""
    import io

    import pdfplumber
    from pdfminer.psparser import PSException
    from pdfplumber.utils.exceptions import MalformedPDFException, PdfminerException

    from docsan.text.paragraphs import paragraphs_to_blocks

    out = []
    gaps: list[Gap] = []
    try:
        with pdfplumber.open(io.BytesIO(source) if isinstance(source, bytes) else source) as pdf:
            wanted = set(_wanted_pages(len(pdf.pages), pages, config, gaps, name))
            for i, p in enumerate(pdf.pages, start=1):
                if i not in wanted:
                    continue
                blocks = paragraphs_to_blocks(p.extract_text() or "", Source.TEXT_LAYER)
                out.append(Page(i, tuple(blocks), width=float(p.width), height=float(p.height)))
    # pdfplumber wraps pdfminer's errors (a mutated file without /Root: PdfminerException).
    except (PSException, PdfminerException, MalformedPDFException, ValueError, KeyError, TypeError) as err:
        raise InputError(name, f"damaged PDF: page tree unreadable ({type(err).__name__})") from None
    if not out:
        raise InputError(name, "damaged PDF: no readable pages")
    note = f"PyMuPDF could not read the page tree; read {len(out)} page(s) with pdfplumber (no OCR, no tables)"
    return Document(pages=tuple(out), kind=DocumentKind.PDF, name=name, notes=(note,), gaps=tuple(gaps))
