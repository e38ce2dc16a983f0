"""Block geometry the stages share: how thick a block is, where its lines sit, which blocks form a paragraph.

The document model keeps a box per block, not per line. These helpers recover
what the furniture, table, reflow and near-duplicate stages need from the box,
the font size and the line count, and say in one place what "one text line
thick" and "the next block continues this paragraph" mean.

Two thicknesses, both in font sizes, because two different things are asked:

* :data:`LINE_HEIGHT` (1.6): the box holds one line of one font. Line spacing
  is 1.2 font sizes; the glyph-tight boxes of two stacked lines start at about
  1.7 (the hidden OCR layer of zh_feida_audit_letter: two lines of a paragraph
  in a box 1.7 font sizes tall, which reflow must still join).
* :data:`ROW_THICKNESS` (1.8): the box is one printed row whose pieces sit
  side by side and may mix sizes (a footer's title and page number, the cells
  of a table row). The rotated table of us_budget_fy2013 has rows 1.6-1.8 font
  sizes thick, which the table detection must still see as rows.
"""

from __future__ import annotations

from docsan.model import BBox, Block, BlockKind, Source

# A box as PyMuPDF gives it, in points from the top-left corner: (x0, y0, x1, y1).
# A plain tuple where boxes are made by the thousand (the extractor, the ruled-table finder).
Rect = tuple[float, float, float, float]

# In font sizes; see the module docstring.
LINE_HEIGHT = 1.6
ROW_THICKNESS = 1.8
# Font size assumed when an extractor gives none (PDF body text is 9-12 pt).
DEFAULT_SIZE = 10.0


class Tenths(dict[float, float]):
    """``round(x, 1)`` of each value looked up (``tenths[x]``), computed once per distinct value.

    ``round`` to a number of digits formats the float as decimal digits and parses
    them back, thousands of instructions a call; the extractor rounds a font size
    for every line and a line's height for every table span, and a page holds a few
    distinct ones. Make one per page or table: it keeps every value it saw.
    (0.0 and -0.0 would share an entry: MuPDF's sizes are never negative, and
    rounded heights are only compared.)
    """

    def __missing__(self, x: float) -> float:
        rounded = self[x] = round(x, 1)
        return rounded


def font_size(block: Block) -> float:
    return block.font_size or DEFAULT_SIZE


def is_vertical(block: Block) -> bool:
    """True for a block of text set sideways: tall, and no wider than a line or two.

    A rotated page (a landscape report set sideways) or a margin slug keeps its
    lines running along y; their distance from a page edge is then read along x.
    """
    box = block.bbox
    if box is None or box.height <= 2 * box.width or box.width > 2.5 * font_size(block):
        return False
    # Under three characters the box shape says nothing: a lone "4" is taller than wide.
    return max(len(line.strip()) for line in block.text.split("\n")) >= 3


def thickness(block: Block) -> float:
    """The block's extent across its text direction (height, or width for sideways text)."""
    box = block.bbox
    if box is None:
        return 0.0
    return box.width if is_vertical(block) else box.height


def is_one_row(block: Block) -> bool:
    """True when the block is one printed line thick, its lines side by side."""
    return block.bbox is not None and thickness(block) <= ROW_THICKNESS * font_size(block)


def line_centres(block: Block, vertical: bool | None = None) -> list[float]:
    """Where each line of a block sits along the page's reading axis (y, or x for sideways text).

    One-row blocks: every line at the block's centre. Otherwise lines are
    stacked and spread evenly over the box. ``vertical`` is ``is_vertical(block)``
    when the caller has asked it already.
    """
    box = block.bbox
    n = block.text.count("\n") + 1
    if box is None:
        return [0.0] * n
    if vertical is None:
        vertical = is_vertical(block)
    lo, hi = (box.x0, box.x1) if vertical else (box.y0, box.y1)
    # The stretch along the reading axis is the block's thickness: is_one_row without asking is_vertical again.
    if n == 1 or hi - lo <= ROW_THICKNESS * font_size(block):
        return [(lo + hi) / 2] * n
    step = (hi - lo) / n
    return [lo + (i + 0.5) * step for i in range(n)]


def aligned(a: Block, b: Block, slack: float = 2.0) -> bool:
    """Same left edge, same right edge, or same centre, within ``slack`` points."""
    if a.bbox is None or b.bbox is None:
        return False
    ax0, ax1, bx0, bx1 = a.bbox.x0, a.bbox.x1, b.bbox.x0, b.bbox.x1
    return abs(ax0 - bx0) <= slack or abs(ax1 - bx1) <= slack or abs(ax0 + ax1 - bx0 - bx1) / 2 <= slack


# -- paragraphs cut into one block per line --------------------------------------------------------

_LAYOUT = frozenset({Source.TEXT_LAYER, Source.OCR})
# In font sizes; see merge_line_blocks.
_MAX_GAP = 1.5
_ALIGN = 0.3
_FIRST_LINE_INDENT = 2.5
_SAME_SIZE = 0.1
_FULL = 2.0


def merge_line_blocks(blocks: tuple[Block, ...]) -> list[tuple[Block, tuple[Block, ...]]]:
    """Regroup PDF blocks that hold one line each into the paragraphs they came from.

    Some PDF producers write every line as its own text object, so PyMuPDF
    returns one block per line (``zh_resume_near_duplicate_paragraphs_2p.pdf``:
    each line of a Chinese paragraph is a block). Reflow joins lines *within* a
    block; this function first puts such line blocks back together, using only
    their geometry, so reflow can treat them like any other paragraph.

    A block continues the one before it when all of this holds:

    - both are text blocks from a PDF layout (text layer or OCR) with a box and
      a font size, holding one line of text that is one line on the page too
      (the box at most 1.6 font sizes tall);
    - same font size (within 10%), the same left edge (within 0.3 font sizes) or
      the earlier line indented by up to 2.5 font sizes (a paragraph's first
      line: Chinese indents two characters), and the next line starts below,
      less than 1.5 font sizes further down (Chinese reports are often set with
      double line spacing, zh_dbdq: 1.2 font sizes between lines; a cell beside
      it on the same row is not below);
    - the earlier line is full: it ends within two font sizes (two CJK
      characters, about four Latin ones) of the column's right edge, the widest
      line starting at that left edge or up to a first-line indent left of it.

    Apart from "one line of text", every test is geometry: reflow rewrites the
    text between two runs, the boxes stay (and reflow never joins the pieces of a
    one-row block, so that test stays too). Only one-line boxes merge and a
    merged block is several lines tall, so a second pass merges nothing new: the
    regrouping is idempotent. Ragged-right lines that end early are not merged
    (safe: they stay separate blocks as the extractor gave them). The "full line" test is what tells a wrapped line from
    a paragraph end, which is why the gap allowance can be generous.

    Returns each output block with the input blocks it was made of (itself alone when unmerged).
    """
    edges = right_edges(blocks)
    groups: list[list[Block]] = []
    for block in blocks:
        if groups and continues_paragraph(groups[-1][-1], block, edges):
            groups[-1].append(block)
        else:
            groups.append([block])
    return [(_merged(g), tuple(g)) for g in groups]


def _usable(block: Block) -> bool:
    # One printed line holding one piece of text: a one-row block with several
    # lines is cells side by side (a table row), not a line of a paragraph.
    return (
        block.kind is BlockKind.TEXT
        and block.source in _LAYOUT
        and is_one_line(block)
        and bool(block.text.strip())
        and "\n" not in block.text.strip()
    )


def is_one_line(block: Block) -> bool:
    """The block's box is one line of its font tall (:data:`LINE_HEIGHT`); False without box or font size."""
    return (
        block.bbox is not None and bool(block.font_size) and block.bbox.height <= LINE_HEIGHT * (block.font_size or 0.0)
    )


def is_row_of_pieces(block: Block) -> bool:
    """A block one text line tall holding several lines: pieces side by side, e.g. table cells."""
    return "\n" in block.text.strip() and is_one_line(block)


def right_edges(blocks: tuple[Block, ...]) -> dict[int, float]:
    """The widest right edge of the text blocks, per left edge rounded to a point (for continues_paragraph).

    A lookup table rather than a scan of the page per pair of blocks, which
    would be quadratic on a page of thousands of line blocks.
    """
    # Every text block counts, not only mergeable ones: a merged block must
    # leave the column's edge where it was, or a second pass would judge
    # "full" against a different edge.
    edges: dict[int, float] = {}
    for b in blocks:
        if b.kind is BlockKind.TEXT and b.source in _LAYOUT and b.bbox is not None:
            key = round(b.bbox.x0)
            edges[key] = max(edges.get(key, b.bbox.x1), b.bbox.x1)
    return edges


def continues_paragraph(prev: Block, nxt: Block, edges: dict[int, float]) -> bool:
    """Is ``nxt`` the next line of the paragraph whose last line is ``prev``? (The rule is in merge_line_blocks.)

    ``edges`` is :func:`right_edges` of the page's blocks.
    """
    if not (_usable(prev) and _usable(nxt)):
        return False
    assert prev.bbox is not None and nxt.bbox is not None and prev.font_size and nxt.font_size
    size = prev.font_size
    if abs(nxt.font_size - size) > _SAME_SIZE * size:
        return False
    left = nxt.bbox.x0
    if not -_ALIGN * size <= prev.bbox.x0 - left <= _FIRST_LINE_INDENT * size:
        return False
    if not -_ALIGN * size <= nxt.bbox.y0 - prev.bbox.y1 <= _MAX_GAP * size:
        return False
    # The column is every text block starting at this left edge or up to a
    # first-line indent left of it: a merged paragraph's box starts at its
    # leftmost line, so after a merge its width must still count for the lines
    # indented within it (a list item's text beside its bullet), or a second
    # pass would see a narrower column and join what the first pass kept apart.
    reach = _ALIGN * size
    lo, hi = round(left - _FIRST_LINE_INDENT * size), round(left + reach)
    right = max(edges.get(k, left) for k in range(lo, hi + 1))
    return prev.bbox.x1 >= right - _FULL * size


def _merged(group: list[Block]) -> Block:
    if len(group) == 1:
        return group[0]
    boxes = [b.bbox for b in group if b.bbox is not None]
    bbox = BBox(
        min(b.x0 for b in boxes),
        min(b.y0 for b in boxes),
        max(b.x1 for b in boxes),
        max(b.y1 for b in boxes),
    )
    size = max(b.font_size or 0.0 for b in group)
    return Block(
        "\n".join(b.text for b in group), kind=group[0].kind, source=group[0].source, bbox=bbox, font_size=size
    )
