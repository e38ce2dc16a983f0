"""Repair a table grid whose spanned cells came out collapsed or repeated.

Extractors lose spans in two ways: they repeat a spanned value in every grid
position it covers (``| a | a | a |``), or they write it at both ends of the
span with empty cells between (``地址| | | | |地址``). Both are repaired to one
spanned cell. The rules are deliberately narrow, because equal values in
neighbouring cells are often real data:

* horizontal, value … empty … value: the empty cells between two equal values
  of one row are the trace of a lost column span; merged in any row;
* horizontal, value value (no gap): merged only in header rows, where a
  multi-column heading is the usual cause, and below the first header row
  only under one parent heading; a body row with two equal figures
  (``205,088.00 | 205,088.00``) is data;
* values without a letter (figures, dates, dashes) are never merged;
* vertical: never inferred. Equal values in different rows are separate
  facts (the same rating meaning in four rows of a prospectus) unless the
  extractor itself marked a ``rowspan``.

Then rows and columns that hold no text go, and spans shrink with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from docsan.config import TablePolicy
from docsan.model import Cell, Table

_LETTER = regex.compile(r"\p{L}")
_SPACE = regex.compile(r"\s+")


def _squash(text: str) -> str:
    """Cells compare without whitespace: extractors wrap a spanned value differently in each copy."""
    return _SPACE.sub("", text)


@dataclass(slots=True)
class RepairResult:
    table: Table
    # Original row index -> new row index (None when the row was dropped).
    row_map: list[int | None]
    merged_rows: set[int]
    cells_merged: int
    rows_dropped: int
    cols_dropped: int

    @property
    def changed(self) -> bool:
        return bool(self.cells_merged or self.rows_dropped or self.cols_dropped)


def _owners(table: Table) -> list[list[tuple[int, int]]]:
    """For every grid position, the (row, col) of the cell whose text it shows."""
    n_rows, n_cols = table.n_rows, table.n_cols
    owner = [[(r, c) for c in range(n_cols)] for r in range(n_rows)]
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row):
            if cell.covered:
                continue
            for rr in range(r, min(r + cell.rowspan, n_rows)):
                for cc in range(c, min(c + cell.colspan, n_cols)):
                    # A span covers only positions marked covered: a cell of its own inside a span's
                    # area (an inconsistent extractor grid) keeps its text rather than losing it.
                    if (rr, cc) != (r, c) and _covered(table, rr, cc):
                        owner[rr][cc] = (r, c)
    return owner


def _covered(table: Table, r: int, c: int) -> bool:
    row = table.rows[r]
    return c >= len(row) or row[c].covered


def is_settled(table: Table, policy: TablePolicy) -> bool:
    """True when :func:`repair_grid` has nothing to do: it would build ``table`` again, cell for cell.

    A grid whose rows are all as long as the first, with a header within it; text in every row and
    every column; spans (not under ``fill``, which writes their value into each position) that hold
    text, stay inside the grid and cover only positions marked covered, each covered position empty
    and under exactly one span; and no two cells of a row that the horizontal rules (the module's
    docstring) could merge: a cell with text and the row's next cell with text, equal without
    whitespace and holding a letter, with an empty or covered position between them or in a header
    row (compared by ``str.split``, which removes what :func:`_squash` removes and four ASCII
    separators more, so values it tells apart differ to ``_squash`` too). Equal values further
    apart, or side by side in a body row, are data the repair leaves as they are. Most extracted
    tables are such grids: 64 of the corpus's 79 (60 when any two equal values of a row counted,
    and the repair of the other four, 1,476 cells, gave them back unchanged).
    """
    rows = table.rows
    if type(rows) is not tuple or not rows or not 0 <= table.header_rows <= len(rows):
        return False
    width = len(rows[0])
    if any(type(row) is not tuple or len(row) != width for row in rows):
        return False
    spanned: set[tuple[int, int]] = set()  # the covered positions under a span
    covered = 0
    filled: set[int] = set()
    for r, row in enumerate(rows):
        header = r < table.header_rows
        last: str | None = None  # the key of the row's last cell with text
        apart = False  # an empty or covered position since that cell
        for c, cell in enumerate(row):
            if cell.covered:
                if cell != _COVERED:
                    return False
                covered += 1
                apart = True
                continue
            spans = cell.rowspan != 1 or cell.colspan != 1
            if spans and (policy == "fill" or not cell.text or not _spans_covered(rows, r, c, spanned)):
                return False
            if not cell.text:
                apart = True
                continue
            filled.add(c)
            key = "".join(cell.text.split())
            if key == last and (apart or header) and _LETTER.search(key):
                return False
            last, apart = key, False
        if last is None:
            return False
    return len(filled) == width and len(spanned) == covered


_COVERED = Cell("", covered=True)


def _spans_covered(rows: tuple[tuple[Cell, ...], ...], r: int, c: int, spanned: set[tuple[int, int]]) -> bool:
    """The span of the cell at (r, c) lies in the grid and covers only covered positions no other span covers.

    Adds those positions to ``spanned``.
    """
    cell = rows[r][c]
    if cell.rowspan < 1 or cell.colspan < 1 or r + cell.rowspan > len(rows) or c + cell.colspan > len(rows[0]):
        return False
    for rr in range(r, r + cell.rowspan):
        for cc in range(c, c + cell.colspan):
            if (rr, cc) == (r, c):
                continue
            if not rows[rr][cc].covered or (rr, cc) in spanned:
                return False
            spanned.add((rr, cc))
    return True


def repair_grid(table: Table, policy: TablePolicy = "once") -> RepairResult:
    """Merge collapsed spans, drop empty rows and columns, lay the spans out per ``policy``."""
    if is_settled(table, policy):
        return RepairResult(table, list(range(table.n_rows)), set(), 0, 0, 0)
    return _repair(table, policy)


def _repair(table: Table, policy: TablePolicy) -> RepairResult:
    """:func:`repair_grid` without the test for a grid it has nothing to do for."""
    n_rows, n_cols = table.n_rows, table.n_cols
    text = {
        (r, c): (cell.text if c < len(row) and not cell.covered else "")
        for r, row in enumerate(table.rows)
        for c, cell in enumerate(list(row) + [Cell("")] * (n_cols - len(row)))
    }
    owner = _owners(table) if n_cols else []
    _adopt_covered_text(table, owner, text)
    merged_rows: set[int] = set()
    merged = 0
    for r in range(n_rows):
        merged += _merge_row(r, owner, text, header=r < table.header_rows, merged_rows=merged_rows)

    # A row or column is kept only if some cell *starts* there with text: one
    # that is merely crossed by a span from elsewhere adds no content, and
    # dropping it shrinks the span (``地址| | | | |地址`` becomes one cell).
    anchors = {(r, c) for r in range(n_rows) for c in range(n_cols) if owner[r][c] == (r, c) and text[(r, c)]}
    keep_rows = sorted({r for r, _ in anchors})
    keep_cols = sorted({c for _, c in anchors})
    rows: list[tuple[Cell, ...]] = []
    for r in keep_rows:
        row = []
        for c in keep_cols:
            o = owner[r][c]
            value = text[o]
            # An empty spanned cell is just empty positions: nothing to show once or fill.
            if o == (r, c) or policy == "fill" or not value:
                row.append(Cell(value))
                continue
            row.append(Cell("", covered=True))
        rows.append(tuple(row))
    if policy != "fill":
        rows = _set_spans(rows, owner, keep_rows, keep_cols)
    header_rows = sum(1 for r in keep_rows if r < table.header_rows)
    row_map: list[int | None] = [None] * n_rows
    for new, old in enumerate(keep_rows):
        row_map[old] = new
    return RepairResult(
        Table(tuple(rows), header_rows=header_rows),
        row_map,
        merged_rows,
        merged,
        n_rows - len(keep_rows),
        n_cols - len(keep_cols),
    )


def _adopt_covered_text(table: Table, owner: list[list[tuple[int, int]]], text: dict[tuple[int, int], str]) -> None:
    """Text an extractor put in a covered position is content, not a span's shadow.

    It goes to the spanning cell when that one is empty, or becomes a cell of
    its own when it says something else: a row is dropped only when no text
    starts in it, and text in a covered cell would otherwise be dropped with
    it (pdfminer's Zen of Python, framed as one tall cell, lost its lines
    as "empty table rows").
    """
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row):
            if not (cell.covered and cell.text.strip()):
                continue
            anchor = owner[r][c]
            if not text[anchor]:
                text[anchor] = cell.text
            elif _squash(cell.text) != _squash(text[anchor]):
                owner[r][c] = (r, c)
                text[(r, c)] = cell.text


def _merge_row(
    r: int,
    owner: list[list[tuple[int, int]]],
    text: dict[tuple[int, int], str],
    *,
    header: bool,
    merged_rows: set[int],
) -> int:
    """Extend a cell over the following positions of row ``r`` that repeat it; return cells absorbed."""
    n_cols = len(owner[r])
    absorbed = 0
    c = 0
    while c < n_cols:
        anchor = owner[r][c]
        value = text[anchor]
        # Only a cell that starts in this row and spans one row may grow
        # sideways; a rowspan cell's shape was set by the extractor.
        if not value or anchor[0] != r or not _LETTER.search(value) or _rowspan(owner, anchor) > 1:
            c += 1
            continue
        end = _span_end(owner, r, c)
        j = end + 1
        gap: list[int] = []
        while j < n_cols:
            o = owner[r][j]
            if o[0] != r or _rowspan(owner, o) > 1:
                break
            other = text[o]
            if not other:
                gap.append(j)
                j += 1
                continue
            # Side by side, equal headings are one spanned heading only under one parent: "Domestic |
            # Domestic" under "JTA" and "RAC" are two columns' names (JAL's traffic tables).
            under_one = r == 0 or owner[r - 1][c] == owner[r - 1][j]
            if _squash(other) != _squash(value) or (not gap and not (header and under_one)):
                break
            # Absorb the gap and the repeat into the anchor.
            last = _span_end(owner, r, j)
            for k in range(end + 1, last + 1):
                if owner[r][k] != anchor and owner[r][k] == (r, k) and text[(r, k)] == value:
                    absorbed += 1
                owner[r][k] = anchor
            text_clear = [(r, k) for k in range(end + 1, last + 1) if (r, k) != anchor]
            for pos in text_clear:
                text[pos] = ""
            merged_rows.add(r)
            end = last
            gap = []
            j = last + 1
        c = end + 1
    return absorbed


def _span_end(owner: list[list[tuple[int, int]]], r: int, c: int) -> int:
    anchor = owner[r][c]
    end = c
    while end + 1 < len(owner[r]) and owner[r][end + 1] == anchor:
        end += 1
    return end


def _rowspan(owner: list[list[tuple[int, int]]], anchor: tuple[int, int]) -> int:
    r, c = anchor
    span = 1
    while r + span < len(owner) and owner[r + span][c] == anchor:
        span += 1
    return span


def _set_spans(
    rows: list[tuple[Cell, ...]],
    owner: list[list[tuple[int, int]]],
    keep_rows: list[int],
    keep_cols: list[int],
) -> list[tuple[Cell, ...]]:
    """Give each anchor cell the rowspan/colspan of the kept positions it owns."""
    out = [list(row) for row in rows]
    for i, r in enumerate(keep_rows):
        for j, c in enumerate(keep_cols):
            if owner[r][c] != (r, c) or not rows[i][j].text:
                continue
            rowspan = 1
            while i + rowspan < len(keep_rows) and owner[keep_rows[i + rowspan]][c] == (r, c):
                rowspan += 1
            colspan = 1
            while j + colspan < len(keep_cols) and owner[r][keep_cols[j + colspan]] == (r, c):
                colspan += 1
            if rowspan > 1 or colspan > 1:
                out[i][j] = Cell(out[i][j].text, rowspan=rowspan, colspan=colspan)
    return [tuple(row) for row in out]
