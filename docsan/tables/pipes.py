"""Recognise text that is already a pipe table (``a | b | c``) and read it into a grid.

Upstream converters (and the incident's own PDF pipeline) export tables as
pipe-separated lines, with or without outer pipes and a ``|---|`` rule. Such a
block is turned into a real :class:`~docsan.model.Table` so the table stage can
repair it and the renderer writes one clean Markdown table.

A block is a pipe table only when it has the shape of one (prose and shell
lines with pipes stay prose):

* *every* non-empty line splits into at least three cells ("a | b" is prose);
* and it has a Markdown rule row (``|---|---|``), or several lines with the
  same number of cells, or, as one line, empty cells between its values (the
  incident's collapsed ``地址| | | | |地址``), which ``ls | grep x | wc -l``
  does not have;
* no line spells a control token (``<|im_start|>system`` is a token and a
  word, not three cells).
"""

from __future__ import annotations

import regex

from docsan.model import Table

# Split on a pipe not preceded by a backslash. Fixed-width lookbehind: linear.
_CELL_SPLIT = regex.compile(r"(?<!\\)\|")
# A Markdown header rule: cells of dashes with optional alignment colons.
_RULE_CELL = regex.compile(r"\s*:?-{3,}:?\s*")
# Three cells on every line: one pipe (or two with outer pipes) is prose or a garbled glyph run.
MIN_CELLS = 3
# ChatML-style control-token spellings (<|im_start|>, <｜User｜>): their bars are not cell borders.
_TOKEN_SPELLING = regex.compile(r"<\|[^|\n]{1,64}\|>|<｜[^｜\n]{1,64}｜>")


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(s)]


def _table_shaped(rows: list[list[str]]) -> bool:
    if len(rows) > 1:
        return len({len(r) for r in rows}) == 1
    inner = rows[0][1:-1]
    return any(not c for c in inner)


def _is_rule(cells: list[str]) -> bool:
    return all(_RULE_CELL.fullmatch(c) for c in cells)


def parse_pipe_table(text: str) -> Table | None:
    """The grid of a pipe-table block, or None when the block is not one.

    With a ``|---|`` rule the lines above it are the header; without one the
    first line is taken as the header, the Markdown convention.
    """
    if text.count("|") < MIN_CELLS - 1:  # a line of MIN_CELLS cells has at least MIN_CELLS - 1 pipes
        return None
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines or any(len(_cells(line)) < MIN_CELLS for line in lines) or _TOKEN_SPELLING.search(text):
        return None
    rows: list[list[str]] = []
    header_rows = 1
    ruled = False
    for line in lines:
        cells = _cells(line)
        if _is_rule(cells):
            header_rows, ruled = len(rows), True
            continue
        rows.append(cells)
    if not rows or not (ruled or _table_shaped(rows)):
        return None
    return Table.from_strings([list(r) for r in rows], header_rows=header_rows if len(rows) > 1 else 1)
