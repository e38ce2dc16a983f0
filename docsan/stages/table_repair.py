"""Collapsed table cells: one spanned value instead of copies, no empty rows or columns.

Three inputs reach this stage:

* table blocks with a grid from an extractor (spans marked, or lost and
  repeated);
* text blocks that are already pipe tables (``地址| | | | |地址``), which
  become table blocks so the renderer writes one clean Markdown table;
* tables that came out one cell per line or per block, which are detected and reported
  (not rebuilt: see ``docsan.tables.cell_lines``).

The repair rules, and why vertical spans are never guessed, are in
``docsan.tables.repair``. Every changed row is reported with its old and new text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import ClassVar

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as pydantic_dataclass

from docsan.config import TablePolicy
from docsan.model import Block, BlockKind, Document, Page, Table
from docsan.render import table_row_text, table_text, table_to_markdown
from docsan.report import Change, StageResult
from docsan.tables.cell_lines import cell_per_line_tables
from docsan.tables.pipes import parse_pipe_table
from docsan.tables.repair import RepairResult, repair_grid


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

    def __call__(self, doc: Document) -> StageResult:
        changes: list[Change] = []
        stats: Counter[str] = Counter()
        pages = [self._page(page, changes, stats) for page in doc.pages]
        base = {
            "tables_seen": 0,
            "tables_changed": 0,
            "pipe_tables_parsed": 0,
            "cells_merged": 0,
            "rows_dropped": 0,
            "cols_dropped": 0,
            "cell_per_line_tables": 0,
            "frames_read_as_text": 0,
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
                changes.append(Change(self.name, "one-column frame read as text", page.number, block.text, paras))
                stats["frames_read_as_text"] += 1
                blocks.append(replace(block, kind=BlockKind.TEXT, table=None, text=paras))
                continue
            if from_pipes and (rendered := table_to_markdown(result.table)) != block.text:
                # Reported as the output will show it: the renderer writes the grid as a Markdown table.
                changes.append(Change(self.name, "pipe text read as table", page.number, block.text, rendered))
            blocks.append(replace(block, kind=BlockKind.TABLE, table=result.table, text=table_text(result.table)))
        if self.detect_cell_per_line:
            self._report_cell_lines(page, changes, stats)
        return page.with_blocks(blocks) if touched else page

    def _row_changes(self, page: int, before: Table, result: RepairResult) -> list[Change]:
        out = []
        after_rows = result.table.text_rows()
        for old_index, row in enumerate(before.text_rows()):
            new_index = result.row_map[old_index]
            old_text = table_row_text(row)
            if new_index is None:
                out.append(Change(self.name, "empty table row", page, old_text))
                continue
            new_text = table_row_text(after_rows[new_index])
            if new_text != old_text:
                if old_index in result.merged_rows:
                    reason = "spanned cell merged"
                elif len(after_rows[new_index]) != len(row):
                    reason = "empty table column"
                else:
                    reason = "spanned cell filled"
                out.append(Change(self.name, reason, page, old_text, replacement=new_text))
        return out

    def _report_cell_lines(self, page: Page, changes: list[Change], stats: Counter[str]) -> None:
        for rows in cell_per_line_tables(page):
            stats["cell_per_line_tables"] += 1
            head = "\n".join(rows)
            # Nothing is rewritten: replacement == text marks a finding, not an edit.
            changes.append(
                Change(
                    self.name,
                    f"table emitted one cell per line ({len(rows)} rows; not rebuilt)",
                    page.number,
                    head,
                    replacement=head,
                )
            )
