"""Collapsed table cells: one spanned value instead of copies, no empty rows or columns.

Three inputs reach this stage:

* table blocks with a grid from an extractor (spans marked, or lost and
  repeated);
* text blocks that are already pipe tables (``地址| | | | |地址``), which
  become table blocks so the renderer writes one clean Markdown table;
* tables that came out one cell per line or per block, which are detected and reported
  (not rebuilt: see ``docsan.tables.cell_lines``).

Then a table that ends a page and one that starts the next page, as wide and
with as many columns, are joined when the second continues the first
(``docsan.tables.continued``): its repeated header rows are dropped (and
reported), its rows appended to the first table.

The repair rules, and why vertical spans are never guessed, are in
``docsan.tables.repair``. Every changed row is reported with its old and new text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import ClassVar

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from docsan.config import TablePolicy
from docsan.model import Block, BlockKind, ChangeKind, Document, Page, Table
from docsan.render import table_row_text, table_text, table_to_markdown
from docsan.report import Change, ChangeCode, StageResult
from docsan.tables.cell_lines import cell_per_line_tables
from docsan.tables.continued import join, repeated_header
from docsan.tables.pipes import parse_pipe_table
from docsan.tables.repair import RepairResult, repair_grid

PIPE_TABLE = ChangeCode("tables.pipe_table", ChangeKind.REWRITTEN, "pipe-separated text read as a table grid")
EMPTY_ROW = ChangeCode("tables.empty_row", ChangeKind.REMOVED, "a table row without text")
EMPTY_COLUMN = ChangeCode("tables.empty_column", ChangeKind.REMOVED, "a row's cells of a table column without text")
SPAN_MERGED = ChangeCode(
    "tables.span_merged", ChangeKind.REWRITTEN, "a spanned value the extractor repeated, merged into one cell"
)
SPAN_FILLED = ChangeCode("tables.span_filled", ChangeKind.REWRITTEN, "a spanned value repeated in every cell (fill)")
CELL_PER_LINE = ChangeCode(
    "tables.cell_per_line", ChangeKind.FINDING, "a table the extractor emitted one cell per line (not rebuilt)"
)
FRAME_AS_TEXT = ChangeCode(
    "tables.frame_as_text", ChangeKind.REWRITTEN, "a one-column grid (a frame around text) read as its paragraphs"
)
REPEATED_HEADER = ChangeCode(
    "tables.repeated_header", ChangeKind.REMOVED, "a table's header printed again where it continues on a new page"
)
CONTINUED = ChangeCode(
    "tables.continued", ChangeKind.FINDING, "a table continued at the top of the next page, joined to it"
)


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class TableRepair:
    """Repair collapsed and repeated table cells; turn pipe-table text into tables."""

    name: ClassVar[str] = "tables"

    # once: a spanned value appears once, the cells it spans are blank; the
    # prompt carries each fact once (the incident's token blow-up was copies).
    # fill: the value is repeated in every spanned cell, for retrieval chunks
    # that must stand alone row by row. html: spans are kept and the CLI
    # renders such tables as HTML with colspan/rowspan, which Markdown lacks.
    policy: TablePolicy = "once"
    # Text blocks that are pipe tables become table blocks. On by default:
    # the pipe text is what the incident's collapsed cells looked like.
    parse_pipe_text: bool = True
    # Report tables that came out one cell per line. Detection only, so on.
    detect_cell_per_line: bool = True
    # Join a table continued at the top of the next page to the one ending this page; on: read
    # page by page, a 16-page table is 16 tables and its repeated header reads as data.
    join_continued: bool = True
    # Two tables are one only if their widths differ by at most this share (odd and even pages of
    # a book layout shift the margins, not the width: 490 and 491 pt in the BV rules).
    width_tolerance: float = Field(0.03, ge=0, lt=1)

    def __call__(self, doc: Document) -> StageResult:
        changes: list[Change] = []
        stats: Counter[str] = Counter()
        pages = [self._page(page, changes, stats) for page in doc.pages]
        if self.join_continued and not doc.is_chat:
            pages = self._join_continued(pages, changes, stats)
        base = {
            "tables_seen": 0,
            "tables_changed": 0,
            "pipe_tables_parsed": 0,
            "cells_merged": 0,
            "rows_dropped": 0,
            "cols_dropped": 0,
            "cell_per_line_tables": 0,
            "frames_read_as_text": 0,
            "tables_joined": 0,
            "repeated_headers_dropped": 0,
        }
        return StageResult(doc.with_pages(pages), changes, {**base, **stats})

    def _page(self, page: Page, changes: list[Change], stats: Counter[str]) -> Page:
        blocks: list[Block] = []
        touched = False
        for block in page.blocks:
            table = block.table if block.kind is BlockKind.TABLE else None
            from_pipes = False
            if table is None and self.parse_pipe_text and block.kind is BlockKind.TEXT:
                table = parse_pipe_table(block.text)
                from_pipes = table is not None
            if table is None:
                blocks.append(block)
                continue
            stats["tables_seen"] += 1
            result = repair_grid(table, self.policy)
            if result.table == table and not from_pipes:
                blocks.append(block)
                continue
            touched = True
            stats["pipe_tables_parsed"] += from_pipes
            stats["tables_changed"] += result.changed
            stats["cells_merged"] += result.cells_merged
            stats["rows_dropped"] += result.rows_dropped
            stats["cols_dropped"] += result.cols_dropped
            changes.extend(self._row_changes(page.number, table, result))
            if result.table.n_rows == 0:
                continue
            if result.table.n_cols == 1 and not from_pipes:
                # One column is a frame around text (a printout's border), not a table: its rows are paragraphs.
                paras = "\n\n".join(row[0].text for row in result.table.rows if row[0].text)
                changes.append(FRAME_AS_TEXT.change("one-column frame read as text", page.number, block.text, paras))
                stats["frames_read_as_text"] += 1
                blocks.append(replace(block, kind=BlockKind.TEXT, table=None, text=paras))
                continue
            if from_pipes and (rendered := table_to_markdown(result.table)) != block.text:
                # Reported as the output will show it: the renderer writes the grid as a Markdown table.
                changes.append(PIPE_TABLE.change("pipe text read as table", page.number, block.text, rendered))
            blocks.append(replace(block, kind=BlockKind.TABLE, table=result.table, text=table_text(result.table)))
        if self.detect_cell_per_line:
            self._report_cell_lines(page, changes, stats)
        return page.with_blocks(blocks) if touched else page

    def _join_continued(self, pages: list[Page], changes: list[Change], stats: Counter[str]) -> list[Page]:
        """Append each table that opens a page to the table that closed the page before, when it continues it.

        A joined table's text is rendered once, when the pages are done: a table continued over n
        pages grows n times, and rendering it at each step cost the rows of all the steps.
        """
        out = list(pages)
        open_at: tuple[int, int] | None = None  # (page index, block index) of the table that ended a page
        joined_at: set[tuple[int, int]] = set()  # the tables that took rows: their text is rendered at the end
        for i, page in enumerate(out):
            blocks = list(page.blocks)
            drop = self._continues(out[open_at[0]].blocks[open_at[1]], blocks[0]) if open_at and blocks else None
            if open_at is not None and drop is not None:
                pi, bi = open_at
                first, nxt = out[pi].blocks[bi], blocks.pop(0)
                assert first.table is not None and nxt.table is not None
                joined = join(first.table, nxt.table, drop)
                start = nxt.table.rows[drop] if drop < nxt.table.n_rows else nxt.table.rows[-1]
                opened = out[pi].number
                if drop:
                    header = "\n".join(table_row_text(r) for r in nxt.table.text_rows()[:drop])
                    reason = f"repeated header of the table from page {opened}"
                    changes.append(REPEATED_HEADER.change(reason, page.number, header))
                    stats["repeated_headers_dropped"] += drop
                row = table_row_text(c.text for c in start)
                # A finding: the rows moved to the table they continue, none of their text changed.
                changes.append(CONTINUED.change(f"table continued from page {opened}: joined to it", page.number, row))
                stats["tables_joined"] += 1
                first_blocks = list(out[pi].blocks)
                first_blocks[bi] = replace(first, table=joined)
                joined_at.add(open_at)
                out[pi] = out[pi].with_blocks(first_blocks)
                out[i] = page = page.with_blocks(blocks)
                if not blocks:
                    continue  # the whole page was the table: it may go on over the next one too
            last = blocks[-1] if blocks else None
            open_at = (i, len(blocks) - 1) if last is not None and last.kind is BlockKind.TABLE else None
        for pi, bi in sorted(joined_at):
            blocks = list(out[pi].blocks)
            table = blocks[bi].table
            assert table is not None
            blocks[bi] = replace(blocks[bi], text=table_text(table))
            out[pi] = out[pi].with_blocks(blocks)
        return out

    def _continues(self, a: Block, b: Block) -> int | None:
        """The number of ``b``'s first rows that repeat ``a``'s header when ``b`` continues ``a``, else None."""
        if a.table is None or b.table is None or b.kind is not BlockKind.TABLE or a.bbox is None or b.bbox is None:
            return None
        wide = max(a.bbox.width, b.bbox.width)
        if wide <= 0 or abs(a.bbox.width - b.bbox.width) > self.width_tolerance * wide:
            return None
        return repeated_header(a.table, b.table)

    def _row_changes(self, page: int, before: Table, result: RepairResult) -> list[Change]:
        out = []
        after_rows = result.table.text_rows()
        for old_index, row in enumerate(before.text_rows()):
            new_index = result.row_map[old_index]
            old_text = table_row_text(row)
            if new_index is None:
                out.append(EMPTY_ROW.change("empty table row", page, old_text))
                continue
            new_text = table_row_text(after_rows[new_index])
            if new_text != old_text:
                if old_index in result.merged_rows:
                    code, reason = SPAN_MERGED, "spanned cell merged"
                elif len(after_rows[new_index]) != len(row):
                    code, reason = EMPTY_COLUMN, "empty table column"
                else:
                    code, reason = SPAN_FILLED, "spanned cell filled"
                out.append(code.change(reason, page, old_text, replacement=new_text))
        return out

    def _report_cell_lines(self, page: Page, changes: list[Change], stats: Counter[str]) -> None:
        for rows in cell_per_line_tables(page):
            stats["cell_per_line_tables"] += 1
            reason = f"table emitted one cell per line ({len(rows)} rows; not rebuilt)"
            changes.append(CELL_PER_LINE.change(reason, page.number, "\n".join(rows)))
