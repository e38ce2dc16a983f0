"""Recognise text that is already a pipe table (``a | b | c``) and read it into a grid.

Upstream converters (and the incident's own PDF pipeline) export tables as
pipe-separated lines, with or without outer pipes and a ``|---|`` rule. Such a
block is turned into a real :class:`~docsan.model.Table` so the table stage can
repair it and the renderer writes one clean Markdown table.

A block is a pipe table only when *every* non-empty line splits into at least
three cells: prose with one "a | b" stays prose.
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


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(s)]


def _is_rule(cells: list[str]) -> bool:
    return all(_RULE_CELL.fullmatch(c) for c in cells)


def parse_pipe_table(text: str) -> Table | None:
    """The grid of a pipe-table block, or None when the block is not one.

    With a ``|---|`` rule the lines above it are the header; without one the
    first line is taken as the header, the Markdown convention.
    """
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines or any(len(_cells(line)) < MIN_CELLS for line in lines):
        return None
    rows: list[list[str]] = []
    header_rows = 1
    for line in lines:
        cells = _cells(line)
        if _is_rule(cells):
            header_rows = len(rows)
            continue
        rows.append(cells)
    if not rows:
        return None
    return Table.from_strings([list(r) for r in rows], header_rows=header_rows if len(rows) > 1 else 1)
