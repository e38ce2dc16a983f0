"""Detect a table that the extractor emitted one cell per line or one cell per block.

An unruled table (no lines for the ruled-grid finder) reaches the stages in
one of two shapes:

* **one cell per line**: a row is a block of short lines laid side by side
  (all on one text line of the page), the table a run of such blocks; plain
  PyMuPDF blocks and OCR give this. The order of cells inside a block follows
  the PDF's drawing order, not the columns, and the model keeps no per-line
  positions, so such rows are not rebuilt.
* **one cell per block**: every cell is its own one-line block, in reading
  order column group by column group (``zh_lab_report_table_1p.pdf`` with the
  layout extractor: test names, then methods, then results, then ranges).
  Rows are recovered from the blocks' heights on the page; the text is still
  not rewritten, because a column group can skip a row's empty cell and the
  stage cannot tell which.

Either way the table is reported, with its rows as ``cell | cell`` lines, so
a reader knows the text is a table; building the grid belongs to the extractor.
"""

from __future__ import annotations

from statistics import median

from docsan.geometry import font_size, is_one_row
from docsan.model import Block, BlockKind, Page
from docsan.render import table_row_text

# A row: at least this many cells...
MIN_CELLS = 3
# ...of short text (cells, not wrapped prose: the IRS 3-column text also comes
# out side by side, with lines of 30-40 characters)...
MAX_MEDIAN_CELL_CHARS = 24
# ...and at least this many such rows in a row make a table.
MIN_ROWS = 3
# One-cell blocks share a row when their vertical centres are this many font
# sizes apart at most: cells of one row are set on one baseline.
SAME_ROW = 0.5
# Rows of one table follow each other at most this many font sizes apart
# (centre to centre): a table's rows are single-spaced, a header row slightly
# more; a gap of several lines ends the table.
MAX_ROW_STEP = 2.5


def _short_cells(cells: list[str]) -> bool:
    return len(cells) >= MIN_CELLS and median(len(c) for c in cells) <= MAX_MEDIAN_CELL_CHARS


def _is_row_block(block: Block) -> bool:
    if block.kind is not BlockKind.TEXT or block.bbox is None:
        return False
    if block.text.count("\n") < MIN_CELLS - 1:
        return False  # fewer lines than a row has cells: no need to strip and measure them
    # Side by side: the block is one text line thick (along y, or along x for sideways text). Asked
    # first: the box answers for most blocks, before their lines are stripped and measured.
    if not is_one_row(block):
        return False
    return _short_cells([line.strip() for line in block.text.split("\n") if line.strip()])


def _is_cell_block(block: Block) -> bool:
    """A one-line text block: a candidate cell of a one-cell-per-block table."""
    text = block.text.strip()
    return block.kind is BlockKind.TEXT and block.bbox is not None and bool(text) and "\n" not in text


def _line_runs(page: Page) -> list[list[str]]:
    """Runs of consecutive row blocks with about the same cell count, as row texts."""
    tables: list[list[str]] = []
    run: list[Block] = []
    for block in [*page.blocks, Block("")]:
        cells = block.text.count("\n") + 1
        is_row = _is_row_block(block)
        if is_row and run and abs(cells - (run[-1].text.count("\n") + 1)) <= 1:
            run.append(block)
            continue
        if len(run) >= MIN_ROWS:
            tables.append([table_row_text(b.text.split("\n")) for b in run])
        run = [block] if is_row else []
    return tables


def _block_grid(page: Page) -> list[list[str]]:
    """Tables of one-line blocks that line up in rows of about the same cell count, as row texts."""
    cells = sorted((b for b in page.blocks if _is_cell_block(b)), key=lambda b: _centre(b))
    rows: list[list[Block]] = []
    for block in cells:
        if rows and _centre(block) - _centre(rows[-1][0]) <= SAME_ROW * font_size(block):
            rows[-1].append(block)
        else:
            rows.append([block])
    tables: list[list[str]] = []
    run: list[list[Block]] = []
    for row in [*rows, []]:
        is_row = _short_cells([b.text.strip() for b in row])
        if (
            is_row
            and run
            and abs(len(row) - len(run[-1])) <= 1
            and _centre(row[0]) - _centre(run[-1][0]) <= MAX_ROW_STEP * font_size(row[0])
        ):
            run.append(row)
            continue
        if len(run) >= MIN_ROWS:
            tables.append([table_row_text(b.text.strip() for b in sorted(r, key=_left)) for r in run])
        run = [row] if is_row else []
    return tables


def _centre(block: Block) -> float:
    assert block.bbox is not None
    return (block.bbox.y0 + block.bbox.y1) / 2


def _left(block: Block) -> float:
    assert block.bbox is not None
    return block.bbox.x0


def cell_per_line_tables(page: Page) -> list[list[str]]:
    """The page's tables emitted one cell per line or per block, each as its rows' ``a | b | c`` texts."""
    return _line_runs(page) + _block_grid(page)
