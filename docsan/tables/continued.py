"""A table continued on the next page: is it the same table, and which of its rows repeat the header?

Long tables break at the page end and go on at the top of the next page,
either with their header printed again (the Minnesota contributions report,
the classification society's document lists) or without it (the California
WARN report). Read page by page they are many tables, and the repeated header
reads as a data row in the middle of the data. The tables stage joins them
(:mod:`docsan.stages.table_repair`); the rules here look at the grids only,
the stage has already checked that the table ends one page, the other starts
the next, and both are about as wide.

A table ``b`` continues ``a`` when it has as many columns and

* its first rows are ``a``'s header rows again (compared without spaces and
  case): they are dropped, the header stays once; or
* its first row reads like ``a``'s last row: in every column both fill,
  both are figures or neither is. A first row of names over a column of
  figures is a new table's own header, and nothing is joined.
"""

from __future__ import annotations

import regex

from docsan.model import Cell, Table
from docsan.tables.figures import is_figure

_SPACE = regex.compile(r"\s+")


def _key(row: tuple[Cell, ...]) -> tuple[str, ...]:
    return tuple(_SPACE.sub("", c.text).casefold() for c in row)


def repeated_header(a: Table, b: Table) -> int | None:
    """How many of ``b``'s first rows repeat ``a``'s header (0: none), or None when ``b`` does not continue ``a``."""
    if a.n_cols < 2 or a.n_cols != b.n_cols or not a.rows or not b.rows:
        return None
    head = a.header_rows
    if 0 < head < b.n_rows and all(_key(x) == _key(y) for x, y in zip(a.rows[:head], b.rows[:head], strict=True)):
        # A header cell spanning down into the data cannot be cut off from it.
        if all(r + cell.rowspan <= head for r, row in enumerate(b.rows[:head]) for cell in row if not cell.covered):
            return head
        return None
    if a.n_rows <= head:
        return None  # a header alone: nothing to compare the next page's first row with
    last, first = a.rows[-1], b.rows[0]
    for x, y in zip(last, first, strict=True):
        if x.text and y.text and is_figure(x.text) != is_figure(y.text):
            return None
    return 0


def join(a: Table, b: Table, drop: int) -> Table:
    """``a`` with ``b``'s rows after its first ``drop`` appended; ``a``'s header stays the header."""
    return Table(a.rows + b.rows[drop:], header_rows=a.header_rows)
