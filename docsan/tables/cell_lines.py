"""Detect a table that the extractor emitted one cell per line.

PyMuPDF reads an unruled table row by row but gives each cell its own line,
so a row becomes a block of short lines laid side by side (all on one text
line of the page), and the table a run of such blocks. The order of cells
inside a block follows the PDF's drawing order, not the columns
(``zh_lab_report_table_1p.pdf`` puts the method first and the test name last),
and the model keeps no per-line positions, so rows are not rebuilt here: the
run is reported so a reader knows the text is a table, and the improved
extractor's table detection is the real fix.
"""

from __future__ import annotations

from statistics import median

from docsan.model import Block, BlockKind, Page
from docsan.stages.layout import is_one_row

# A row block: at least this many cells...
MIN_CELLS = 3
# ...of short text (cells, not wrapped prose: the IRS 3-column text also comes
# out side by side, with lines of 30-40 characters)...
MAX_MEDIAN_CELL_CHARS = 24
# ...and at least this many such rows in a row make a table.
MIN_ROWS = 3


def _is_row_block(block: Block) -> bool:
    if block.kind is not BlockKind.TEXT or block.bbox is None:
        return False
    lines = [line.strip() for line in block.text.split("\n") if line.strip()]
    if len(lines) < MIN_CELLS or median(len(line) for line in lines) > MAX_MEDIAN_CELL_CHARS:
        return False
    # Side by side: the block is one text line thick (along y, or along x for sideways text).
    return is_one_row(block)


def cell_per_line_runs(page: Page) -> list[tuple[int, int]]:
    """Runs (first, last block index) of consecutive row blocks with about the same cell count."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    prev_cells = 0
    for i, block in enumerate([*page.blocks, Block("")]):
        cells = block.text.count("\n") + 1
        row = _is_row_block(block)
        if row and start is not None and abs(cells - prev_cells) <= 1:
            prev_cells = cells
            continue
        if start is not None and i - start >= MIN_ROWS:
            runs.append((start, i - 1))
        start, prev_cells = (i, cells) if row else (None, 0)
    return runs
