"""From PyMuPDF's text dictionary to text boxes: visibility, reading order, headings.

One TextPage per page, read as its dictionary (what ``get_text("dict")``
returns), with ``TEXT_COLLECT_VECTORS`` so the same pass also returns the
page's vector graphics (ruling lines, filled rectangles): we need those to
tell white-on-white text from white text on a coloured band, and to decide
whether a page may hold a ruled table, and a second pass over the page
content would cost as much as the text itself.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import NamedTuple, TypeVar

from docsan.extract.mupdf import colour_management, pymupdf
from docsan.geometry import Rect, Tenths
from docsan.tables.ruled import Span

# Extraction flags: keep whitespace as drawn, drop text outside the media box,
# no images (they would be copied into the dictionary, bytes and all), and ligatures
# kept as the PDF has them: MuPDF expands an Arabic lam-khah ligature (U+FCCB) in
# visual order, "خل" for "لخ" (pdf.js ArabicCIDTrueType); normalize expands Latin ones.
TEXT_FLAGS = (
    pymupdf.TEXT_PRESERVE_WHITESPACE
    | pymupdf.TEXT_MEDIABOX_CLIP
    | pymupdf.TEXT_COLLECT_VECTORS
    | pymupdf.TEXT_PRESERVE_LIGATURES
)

# MuPDF's per-character flags (span "char_flags"): the glyph was filled / stroked.
# Text in render mode 3 (invisible, the mode OCR layers use) has neither.
_FILLED = 16
_STROKED = 32
_DRAWN = _FILLED | _STROKED

# A colour channel at or above 0xF0 counts as white (anti-aliased "white" is often 0xFE):
# that is, its high nibble is F, so one mask tests all three channels at once
# (called for every span: a loop over the channels cost 0.5 s on the corpus).
_WHITE_MASK = 0xF0F0F0

# Vector shapes at most this thick (points) are rules, not areas.
_THIN = 2.0

# Columns are separated by a gutter at least this wide (points). Word gaps
# inside one line are ~3 pt; the narrowest gutters in the corpus (IRS 1040NR,
# 3 columns) are ~12 pt.
MIN_GUTTER = 6.0

# A block is a heading when its font is this much larger than the document's
# body text: both relative (15%) and absolute (1 pt), so 9.5 pt vs 9 pt
# rounding noise is not a heading, and it has at most this many lines.
HEADING_RATIO = 1.15
HEADING_MIN_DELTA = 1.0
HEADING_MAX_LINES = 3

# Extra space between two lines of a block, in font sizes, that makes a
# paragraph break (see _split_paragraphs).
PARAGRAPH_GAP = 0.5


class Line(NamedTuple):
    """One line of a text block: its text, box and largest font size.

    A named tuple, not a frozen dataclass: one is made for every line of every
    page, and a tuple is built in one step where a frozen dataclass's
    constructor sets each field through ``object.__setattr__``.
    """

    text: str
    bbox: Rect
    size: float


@dataclass(frozen=True, slots=True)
class TextBox:
    """One PyMuPDF text block, reduced to the spans that matter."""

    lines: tuple[Line, ...]
    # The font size carrying most of the block's characters.
    size: float
    # Computed once (the reading order reads it many times).
    bbox: Rect
    # Characters without the lines' surrounding whitespace (page and document statistics read it).
    chars: int
    # The lines' text, joined once: the quality check and the page's block both read it.
    text: str

    @classmethod
    def of(cls, lines: Sequence[Line]) -> TextBox | None:
        if len(lines) == 1:
            # A box of one line (about half of them): the line's own text, box and size, no tallies.
            ln = lines[0]
            n = len(ln.text.strip())
            return cls((ln,), ln.size, ln.bbox, n, ln.text) if n else None
        # One pass over the lines: this runs for every block of every page.
        kept = []
        sizes: dict[float, int] = {}
        x0 = y0 = float("inf")
        x1 = y1 = float("-inf")
        for ln in lines:
            text, (bx0, by0, bx1, by1), size = ln
            n = len(text.strip())
            if not n:
                continue
            kept.append(ln)
            sizes[size] = sizes.get(size, 0) + n
            # Comparisons, not min()/max() calls: this runs for every line of every page.
            if bx0 < x0:
                x0 = bx0
            if by0 < y0:
                y0 = by0
            if bx1 > x1:
                x1 = bx1
            if by1 > y1:
                y1 = by1
        if not kept:
            return None
        # On equal counts max() keeps the size seen first (the earlier line).
        text = "\n".join([ln.text for ln in kept])
        return cls(tuple(kept), max(sizes, key=sizes.__getitem__), (x0, y0, x1, y1), sum(sizes.values()), text)

    def without(self, drop: Callable[[Line], bool]) -> TextBox | None:
        """This box less the lines ``drop`` selects, or None when nothing is left."""
        return TextBox.of([ln for ln in self.lines if not drop(ln)])


@dataclass(slots=True)
class PageText:
    """What one extraction pass found on a page."""

    visible: list[TextBox] = field(default_factory=list)
    # Text drawn invisibly (render mode 3 or alpha 0): an OCR layer over a
    # scan, or hidden text that must not reach a prompt.
    hidden: list[TextBox] = field(default_factory=list)
    # White text on a white background, dropped: its characters, and its text line by line.
    white_chars: int = 0
    white: list[str] = field(default_factory=list)
    # Straight thin lines and rectangle edges: the ruling lines of tables,
    # horizontal as (x0, x1, y) and vertical as (y0, y1, x).
    rules_h: list[tuple[float, float, float]] = field(default_factory=list)
    rules_v: list[tuple[float, float, float]] = field(default_factory=list)
    # Every visible span, for table cells (which cut across MuPDF's blocks).
    spans: list[Span] = field(default_factory=list)
    # Non-white filled areas: backgrounds that make white text visible.
    fills: list[Rect] = field(default_factory=list)
    # /ActualText that replaces no glyph (a tagged PDF's figure described in words): in ``visible``
    # too, listed here so the extraction can say where that text came from.
    actual_text: list[str] = field(default_factory=list)

    @property
    def hidden_chars(self) -> int:
        return sum(b.chars for b in self.hidden)

    @property
    def visible_chars(self) -> int:
        return sum(b.chars for b in self.visible)


def _is_white(color: int) -> bool:
    return color & _WHITE_MASK == _WHITE_MASK


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _split_columns(lines: list[Line]) -> list[list[Line]]:
    """Split a MuPDF block whose lines sit in separate columns.

    MuPDF groups lines in content-stream order; a file that draws a page
    row by row across three columns (the IRS 1040NR instructions) yields
    blocks mixing lines of all columns. Lines whose x-ranges are separated
    by a gutter belong to different blocks.
    """
    if len(lines) < 2:
        return [lines]
    # Keys and comparisons without Python calls: this runs for every block of every page.
    x0s = [ln.bbox[0] for ln in lines]
    ordered = sorted(range(len(lines)), key=x0s.__getitem__)
    groups = [[ordered[0]]]
    end = lines[ordered[0]].bbox[2]
    for i in islice(ordered, 1, None):
        x0, _, x1, _ = lines[i].bbox
        if x0 > end + MIN_GUTTER:
            groups.append([])
        groups[-1].append(i)
        if x1 > end:  # end = max(end, x1), as max() picks
            end = x1
    if len(groups) == 1:
        return [lines]
    # Keep the original line order inside each column.
    return [[lines[i] for i in sorted(g)] for g in groups]


def _split_paragraphs(lines: list[Line]) -> list[list[Line]]:
    """Split a MuPDF block at gaps clearly wider than its own line spacing.

    MuPDF puts paragraphs set with a small extra gap (a few points) into one
    block; reflow would then join them into one paragraph, and the stages that
    work on paragraphs (near-duplicates, budgets) would see one unit. A gap
    counts as a paragraph break when it exceeds the block's typical gap
    between lines by half a font size: the usual paragraph spacing, well above
    the rounding noise of line boxes. Blocks of fewer than three lines have no
    typical gap to compare with and stay whole.
    """
    if len(lines) < 3:
        return [lines]
    gaps = [b.bbox[1] - a.bbox[3] for a, b in itertools.pairwise(lines)]
    # Lines side by side (a row of cells) overlap vertically: not a line pitch.
    # (The bound is computed once: inside the filter it made long blocks quadratic.)
    overlap = -0.5 * min(ln.size for ln in lines)
    stacked = sorted(g for g in gaps if g > overlap)
    if len(stacked) < 2:
        return [lines]
    typical = stacked[len(stacked) // 2]
    parts = [[lines[0]]]
    for gap, line in zip(gaps, lines[1:], strict=True):
        if gap > typical + PARAGRAPH_GAP * line.size:
            parts.append([])
        parts[-1].append(line)
    return parts


def _line(spans: list[dict], bbox: Rect | None) -> Line:
    """A line from its spans; ``bbox`` is MuPDF's line box when no span was dropped."""
    if len(spans) == 1:
        # Most lines are one span: no joins or min/max scans.
        sp = spans[0]
        return Line(sp["text"], bbox or tuple(sp["bbox"]), round(sp["size"], 1))  # type: ignore[arg-type]
    if bbox is None:
        bbox = (
            min(sp["bbox"][0] for sp in spans),
            min(sp["bbox"][1] for sp in spans),
            max(sp["bbox"][2] for sp in spans),
            max(sp["bbox"][3] for sp in spans),
        )
    return Line("".join(sp["text"] for sp in spans), bbox, round(max(sp["size"] for sp in spans), 1))


def read_page(
    page: pymupdf.Page,
    image_rects: Callable[[], list[Rect]],
    want_spans: Callable[[PageText], bool] = lambda _: True,
    *,
    drawings: bool = True,
) -> PageText:
    """Extract text boxes and rules from ``page`` in one pass.

    ``image_rects`` is called only when white text is found, to see whether
    it sits on a picture (visible) or on the white page (hidden).
    ``want_spans`` sees the page's rules (collected first) and says whether
    to keep the visible spans for table cells; most pages need none.
    Without ``drawings`` the vector graphics are not collected (a page whose
    content is too large for them): no rules, and no fills under white text.
    """
    flags = TEXT_FLAGS if drawings else TEXT_FLAGS & ~pymupdf.TEXT_COLLECT_VECTORS
    # The TextPage is kept for the glyphless pass below, which reads the same page. Its colours are
    # only tested against white: MuPDF's plain conversion, not its ICC profiles (docs/extraction.md).
    with colour_management(False):
        textpage = page.get_textpage(flags=flags)
    data = textpage.extractDICT()
    if page.rotation:
        to_display(data, page)
    out = PageText()
    text_blocks = []
    for b in data["blocks"]:
        if b["type"] == 0:
            text_blocks.append(b)
        elif b["type"] == 3:
            _add_vector(out, b)
    images: list[Rect] | None = None
    keep_spans = want_spans(out)
    tenths = Tenths()
    for b in text_blocks:
        shown: list[Line] = []
        hidden: list[Line] = []
        for line in b["lines"]:
            spans = line["spans"]
            if len(spans) == 1:
                s = spans[0]
                # Most lines are one span drawn visibly in a colour that is not white: the general
                # loop below would reach the same line (MuPDF's box, the span's text and size).
                if s.get("alpha", 255) and s.get("char_flags", _FILLED) & _DRAWN and not _is_white(s["color"]):
                    bbox = tuple(line["bbox"])
                    if keep_spans:
                        out.spans.append(Span(s["text"], tuple(s["bbox"]), (bbox[1] + bbox[3]) / 2))  # type: ignore[arg-type]
                    shown.append(Line(s["text"], bbox, tenths[s["size"]]))  # type: ignore[arg-type]
                    continue
            vis_spans = []
            # Most lines have no hidden or white text: no lists for them.
            hid_spans: list[dict] | None = None
            white_line: list[str] | None = None
            for s in spans:
                # Hidden: alpha 0, or neither filled nor stroked (render mode 3). Written
                # out rather than called: this runs for every span of every page.
                if s.get("alpha", 255) == 0 or not (s.get("char_flags", _FILLED) & _DRAWN):
                    if hid_spans is None:
                        hid_spans = []
                    hid_spans.append(s)
                    continue
                if _is_white(s["color"]) and s["text"].strip():
                    if images is None:
                        images = image_rects()
                    bb = tuple(s["bbox"])
                    if not any(_overlaps(bb, r) for r in out.fills + images):
                        out.white_chars += len(s["text"].strip())
                        if white_line is None:
                            white_line = []
                        white_line.append(s["text"])
                        continue
                vis_spans.append(s)
            if white_line:
                out.white.append("".join(white_line).strip())
            if vis_spans:
                if keep_spans:
                    line_y = (line["bbox"][1] + line["bbox"][3]) / 2
                    out.spans += [Span(s["text"], tuple(s["bbox"]), line_y) for s in vis_spans]  # type: ignore[arg-type]
                shown.append(_line(vis_spans, tuple(line["bbox"]) if len(vis_spans) == len(spans) else None))
            if hid_spans:
                hidden.append(_line(hid_spans, None))
        for lines, target_list in ((shown, out.visible), (hidden, out.hidden)):
            if not lines:
                continue
            # A one-line block (a third of them) has nothing to split.
            groups = (
                (p for col in _split_columns(lines) for p in _split_paragraphs(col)) if len(lines) > 1 else (lines,)
            )
            for group in groups:
                box = TextBox.of(group)
                if box is not None:
                    target_list.append(box)
    if any(not b["lines"] for b in text_blocks):
        _add_glyphless_text(textpage, out)
    return out


def _add_glyphless_text(textpage: pymupdf.TextPage, out: PageText) -> None:
    """Text MuPDF holds without glyph boxes: ``/ActualText`` of a marked-content figure.

    The "dict" output has its block with no lines (pdfium's tagged_actual_text:
    the page's only text is a figure's ActualText, no text-showing operator),
    while the "blocks" output has its text, with a box of zero width or
    height. The blocks come from the text pass's own TextPage: no second interpretation of the page.
    """
    for x0, y0, x1, y1, text, *_ in textpage.extractBLOCKS():
        if text.strip() and (x1 - x0 < 0.5 or y1 - y0 < 0.5):
            lines = [Line(t, (x0, y0, x1, y1), 0.0) for t in text.strip().split("\n")]
            box = TextBox.of(lines)
            if box is not None:
                out.visible.append(box)
                out.actual_text.append(box.text)


def to_display(data: dict, page: pymupdf.Page) -> None:
    """Turn every box of a text dictionary from unrotated into displayed page coordinates.

    MuPDF reports text of a ``/Rotate 90`` page in the unrotated space, where
    its lines run vertically; columns, rows and table cells only make sense
    as the reader sees the page.
    """
    a, b_, c, d, e, f = tuple(page.rotation_matrix)

    def turn(bbox: Sequence[float]) -> Rect:
        # Plain arithmetic: pymupdf.Rect * Matrix is ~10x slower per box.
        x0, y0, x1, y1 = bbox
        xs = (a * x0 + c * y0 + e, a * x1 + c * y1 + e)
        ys = (b_ * x0 + d * y0 + f, b_ * x1 + d * y1 + f)
        return (min(xs), min(ys), max(xs), max(ys))

    for b in data["blocks"]:
        b["bbox"] = turn(b["bbox"])
        for line in b.get("lines", ()):
            line["bbox"] = turn(line["bbox"])
            for span in line["spans"]:
                span["bbox"] = turn(span["bbox"])
                for ch in span.get("chars", ()):
                    ch["bbox"] = turn(ch["bbox"])


def _add_vector(out: PageText, v: dict) -> None:
    x0, y0, x1, y1 = v["bbox"]
    w, h = x1 - x0, y1 - y0
    if v.get("alpha", 255) == 0:
        return
    if v.get("stroked") or min(w, h) <= _THIN:
        # A thin filled rectangle is how most generators draw a rule; a
        # stroked rectangle contributes its four edges.
        if h <= _THIN and w >= _THIN:
            out.rules_h.append((x0, x1, (y0 + y1) / 2))
        elif w <= _THIN and h >= _THIN:
            out.rules_v.append((y0, y1, (x0 + x1) / 2))
        elif v.get("isrect"):
            out.rules_h += [(x0, x1, y0), (x0, x1, y1)]
            out.rules_v += [(y0, y1, x0), (y0, y1, x1)]
        return
    if not _is_white(v.get("color") or 0):
        out.fills.append((x0, y0, x1, y1))


T = TypeVar("T")


def reading_order(items: Sequence[T], bbox: Callable[[T], Rect]) -> list[T]:
    """Order ``items`` column by column with a recursive XY-cut.

    Split at a vertical gutter if one runs through the whole group (columns
    are read left to right, each to the end before the next); otherwise at a
    horizontal gap (bands top to bottom); a group that cannot be cut is read
    top to bottom, left to right. A full-width title above three columns
    blocks every vertical cut, so it is first cut off as a band, then the
    band below splits into its columns.
    """
    return [it for _, it in _xy_cut([(bbox(it), it) for it in items])]


def _xy_cut(boxed: list[tuple[Rect, T]]) -> list[tuple[Rect, T]]:
    if len(boxed) <= 1:
        return boxed
    for axis, gap in ((0, MIN_GUTTER), (1, 0.0)):
        parts = _split(boxed, axis, gap)
        if len(parts) > 1:
            return [x for part in parts for x in _xy_cut(part)]
    return sorted(boxed, key=lambda bi: (round(bi[0][1], 1), bi[0][0]))


def _split(boxed: list[tuple[Rect, T]], axis: int, min_gap: float) -> list[list[tuple[Rect, T]]]:
    lo, hi = axis, axis + 2
    ordered = sorted(boxed, key=lambda bi: bi[0][lo])
    parts = [[ordered[0]]]
    end = ordered[0][0][hi]
    for bi in ordered[1:]:
        if bi[0][lo] > end + min_gap:
            parts.append([bi])
        else:
            parts[-1].append(bi)
        end = max(end, bi[0][hi])
    return parts


def body_size(boxes: Sequence[TextBox]) -> float | None:
    """The font size carrying most characters: the body text's size."""
    sizes: Counter[float] = Counter()
    for b in boxes:
        sizes[round(b.size * 2) / 2] += b.chars
    return sizes.most_common(1)[0][0] if sizes else None


def is_heading(box: TextBox, body: float | None) -> bool:
    if body is None or len(box.lines) > HEADING_MAX_LINES:
        return False
    return box.size >= body * HEADING_RATIO and box.size >= body + HEADING_MIN_DELTA
