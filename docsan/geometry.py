"""Block geometry the structural stages share: how thick a block is, where its lines sit.

The document model keeps a box per block, not per line. These helpers recover
what the furniture and table stages need from the box, the font size and the
line count, and say in one place what "one text line thick" means.
"""

from __future__ import annotations

from docsan.model import Block

# A block at most this many font sizes thick holds one printed line: PyMuPDF
# then puts several pieces of it (a footer's title and page number, the cells
# of a table row) side by side as separate lines of the block. Line spacing is
# 1.2 font sizes; 1.8 leaves room for mixed sizes without admitting two lines.
ONE_ROW_THICKNESS = 1.8
# Font size assumed when an extractor gives none (PDF body text is 9-12 pt).
DEFAULT_SIZE = 10.0


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
    return block.bbox is not None and thickness(block) <= ONE_ROW_THICKNESS * font_size(block)


def line_centres(block: Block) -> list[float]:
    """Where each line of a block sits along the page's reading axis (y, or x for sideways text).

    One-row blocks: every line at the block's centre. Otherwise lines are
    stacked and spread evenly over the box.
    """
    box = block.bbox
    n = block.text.count("\n") + 1
    if box is None:
        return [0.0] * n
    lo, hi = (box.x0, box.x1) if is_vertical(block) else (box.y0, box.y1)
    if n == 1 or is_one_row(block):
        return [(lo + hi) / 2] * n
    step = (hi - lo) / n
    return [lo + (i + 0.5) * step for i in range(n)]


def aligned(a: Block, b: Block, slack: float = 2.0) -> bool:
    """Same left edge, same right edge, or same centre, within ``slack`` points."""
    if a.bbox is None or b.bbox is None:
        return False
    ax0, ax1, bx0, bx1 = a.bbox.x0, a.bbox.x1, b.bbox.x0, b.bbox.x1
    return abs(ax0 - bx0) <= slack or abs(ax1 - bx1) <= slack or abs(ax0 + ax1 - bx0 - bx1) / 2 <= slack
