"""Ruled tables from the ruling lines already collected in the text pass.

Why not ``page.find_tables()`` or pdfplumber: measured on the 262 text-layer
pages of the corpus (docs/extraction.md), PyMuPDF's table finder spent about
2.5 s per candidate page (253 s on 103 pages, against 4.6 s for reading all
262 pages), re-reading drawings and characters we already have, and its cell
text lost the spaces and split numbers ("1,505" -> "1505\\n,") on the EPA
file. A ruled grid is simple to recover from rules we already hold:

1. merge collinear rule pieces; horizontal and vertical rules that touch
   form connected components; a component with at least two rules each way
   is a grid;
2. the distinct rule positions give the grid's rows and columns;
   Vertical rules that start or stop together inside a ruled row (a
   multi-level header: group names over the columns they span, the column
   rules starting under them) split that row at their ends;
3. two neighbouring grid cells with no rule between them are one merged
   cell (rowspan/colspan), found with a union-find; a merged region that is
   not a rectangle (a title row joined to the cells beside the header under
   it) is cut into rectangles, so no cell covers another;
4. each text span goes to the cell holding its centre, cut first where it
   crosses a column line (MuPDF sometimes puts two cells in one span);
5. the header is the first row, and each following row that names the
   sub-columns of a spanned cell above it (no figures in it): NICS's title,
   group names and column names are three header rows.

Unruled tables (aligned columns without lines) are left to the layout
order: detecting them from text alone gave false tables on prose.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice, pairwise
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from docsan.geometry import Rect, Tenths
from docsan.model import Cell, Table
from docsan.tables.figures import is_figure
from docsan.text.joining import join_pieces

# Rule ends closer than this (points) touch; positions closer than this are one grid line.
SNAP = 2.0
# A grid needs at least this many columns and rows: one column is a framed
# text box, one row a framed heading.
MIN_COLS = 2
MIN_ROWS = 2
# Text lines whose centres are further apart than this (points) are different text rows.
ROW_GAP = 3.0
# Split a grid row into text rows when this share of its cells has one line per text row.
SPLIT_SHARE = 0.8
# A cell border counts as drawn when rules cover this share of it.
BORDER_COVERAGE = 0.6

# Candidate crossings (horizontal rule, vertical rule) compared in one array step, bounding its memory.
_CROSSING_SLICE = 1 << 18

HRule = tuple[float, float, float]  # x0, x1, y
VRule = tuple[float, float, float]  # y0, y1, x


class Span(NamedTuple):
    """A visible span of the page: its text, box, and the vertical centre of its line (what cells are filled from).

    A named tuple (built in one step) rather than a frozen dataclass: pages with rules keep every span.
    """

    text: str
    bbox: Rect
    line_y: float


def plausible(rules_h: list[HRule], rules_v: list[VRule]) -> bool:
    """Cheap gate: a ruled grid needs rules both ways."""
    return len(rules_h) >= MIN_ROWS + 1 and len(rules_v) >= MIN_COLS + 1


def _merge(rules: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Join collinear pieces (same position within SNAP, overlapping or touching)."""
    # Cluster by position first, so 100.9 and 101.1 land in one group.
    groups: list[list[tuple[float, float, float]]] = []
    last = 0.0
    for rule in sorted(rules, key=itemgetter(2)):
        if groups and rule[2] - last <= SNAP:
            groups[-1].append(rule)
        else:
            groups.append([rule])
        last = rule[2]
    out: list[tuple[float, float, float]] = []
    for group in groups:
        pos = sum([r[2] for r in group]) / len(group)
        group.sort()
        start, end, _ = group[0]
        for a, b, _ in islice(group, 1, None):
            if a <= end + SNAP:
                if b > end:  # end = max(end, b), as max() picks
                    end = b
                continue
            out.append((start, end, pos))
            start, end = a, b
        out.append((start, end, pos))
    return out


def _components(hs: list[HRule], vs: list[VRule]) -> list[tuple[list[HRule], list[VRule]]]:
    """Rules that touch, joined: groups in order of their first horizontal rule, then of their first vertical one."""
    label = _component_labels(hs, vs)
    groups: dict[int, tuple[list[HRule], list[VRule]]] = {}
    for h, root in zip(hs, label[: len(hs)], strict=True):
        groups.setdefault(root, ([], []))[0].append(h)
    for v, root in zip(vs, label[len(hs) :], strict=True):
        groups.setdefault(root, ([], []))[1].append(v)
    return list(groups.values())


def _component_labels(hs: list[HRule], vs: list[VRule]) -> list[int]:
    """Each rule's component as its smallest index (horizontal rules first, then vertical).

    Whole-array work: a page of a large grid has tens of thousands of crossings,
    which a union-find visited one Python step at a time. The crossings are
    taken in slices of bounded size, and labels spread along them (each rule
    takes the smallest label of a rule it crosses, then of its label's rule)
    until nothing changes: a grid's components are a few crossings wide.
    """
    label = np.arange(len(hs) + len(vs))
    if not hs or not vs:
        return label.tolist()
    h, v = np.array(hs, dtype=np.float64), np.array(vs, dtype=np.float64)
    order = np.argsort(v[:, 2], kind="stable")
    xs = v[order, 2]
    # Only vertical rules whose x lies on a horizontal rule can cross it.
    lo = np.searchsorted(xs, h[:, 0] - SNAP, side="left")
    counts = np.maximum(np.searchsorted(xs, h[:, 1] + SNAP, side="right") - lo, 0)
    ends = np.cumsum(counts)
    starts = ends - counts  # candidate g of rule i is vertical rule order[lo[i] + g - starts[i]]
    src_parts, dst_parts = [], []
    first = 0
    while first < len(hs):
        last = max(int(np.searchsorted(ends, starts[first] + _CROSSING_SLICE, side="right")), first + 1)
        i = np.repeat(np.arange(first, last), counts[first:last])
        j = order[lo[i] + np.arange(starts[first], ends[last - 1]) - starts[i]]
        y = h[i, 2]
        crossing = (v[j, 0] - SNAP <= y) & (y <= v[j, 1] + SNAP)
        src_parts.append(i[crossing])
        dst_parts.append(len(hs) + j[crossing])
        first = last
    src, dst = np.concatenate(src_parts), np.concatenate(dst_parts)
    while True:
        new = label.copy()
        np.minimum.at(new, src, label[dst])
        np.minimum.at(new, dst, label[src])
        new = new[new]
        if np.array_equal(new, label):
            return label.tolist()
        label = new


def _positions(values: list[float]) -> list[float]:
    out: list[float] = []
    for v in sorted(values):
        if not out or v - out[-1] > SNAP:
            out.append(v)
    return out


def _coverage(rules: list[tuple[float, float, float]], positions: list[float], cuts: list[float]) -> list[list[float]]:
    """For each grid line in ``positions``: how much of each segment between ``cuts`` its rules cover.

    One pass over the rules (bisect to the segments each rule touches), so a
    200 x 30 grid costs a few thousand steps, not one scan of all rules per cell.
    """
    out = [[0.0] * (len(cuts) - 1) for _ in positions]
    for a, b, pos in rules:
        i = bisect_left(positions, pos - SNAP)
        if i >= len(positions) or abs(positions[i] - pos) > SNAP:
            continue
        row = out[i]
        for k in range(max(bisect_right(cuts, a) - 1, 0), min(bisect_left(cuts, b), len(cuts) - 1)):
            # max(0, min(b, right) - max(a, left)), written out: this runs for every rule of every grid.
            left, right = cuts[k], cuts[k + 1]
            covered = (right if right < b else b) - (left if left > a else a)
            if covered > 0.0:
                row[k] += covered
    return out


@dataclass(frozen=True, slots=True)
class Grid:
    """A ruled grid: rule positions and each grid cell's merged region."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]
    # Merged region of each grid cell (row-major): (row0, col0, row1, col1), inclusive.
    regions: tuple[tuple[int, int, int, int], ...]
    bbox: Rect
    n_cols: int

    def region_at(self, x: float, y: float) -> tuple[int, int, int, int] | None:
        b = self.bbox
        if not (b[0] <= x <= b[2] and b[1] <= y <= b[3]):
            return None
        c = min(max(bisect_right(self.xs, x) - 1, 0), self.n_cols - 1)
        r = min(max(bisect_right(self.ys, y) - 1, 0), len(self.ys) - 2)
        return self.regions[r * self.n_cols + c]


def _sub_rows(vs: list[VRule], ys: list[float]) -> list[float]:
    """Heights inside the grid where at least two vertical rules start or stop away from any horizontal rule.

    NICS draws each group's column rules from under the group name down, with no
    rule between the name and the column names: the rules' common start is the
    border between the two header rows.
    """
    ends = [y for y0, y1, _ in vs for y in (y0, y1) if ys[0] + SNAP < y < ys[-1] - SNAP]
    out = []
    for group in _clusters_of(ends):
        y = sum(group) / len(group)
        if len(group) >= MIN_COLS and all(abs(y - row) > SNAP for row in ys):
            out.append(y)
    return out


def _clusters_of(values: list[float]) -> list[list[float]]:
    groups: list[list[float]] = []
    for v in sorted(values):
        if groups and v - groups[-1][-1] <= SNAP:
            groups[-1].append(v)
        else:
            groups.append([v])
    return groups


def _rectangles(roots: list[int], n_rows: int, n_cols: int) -> tuple[tuple[int, int, int, int], ...]:
    """Each grid cell's merged region: connected cells of one root, cut into rectangles in reading order.

    A rectangular component is one region (its first cell is its top-left
    corner); any other shape is split: grow right along the row, then down
    while the whole width belongs to it.
    """
    size = n_rows * n_cols
    regions: list[tuple[int, int, int, int] | None] = [None] * size
    for i in range(size):
        if regions[i] is not None:
            continue
        root = roots[i]
        # Cells by index, rows by slices: this visits every cell of every grid.
        end, row_end = i + 1, i - i % n_cols + n_cols
        while end < row_end and roots[end] == root and regions[end] is None:
            end += 1
        width = end - i
        below = i + n_cols
        while (
            below < size
            and roots[below : below + width] == [root] * width
            and regions[below : below + width].count(None) == width
        ):
            below += n_cols
        r, c = divmod(i, n_cols)
        region = (r, c, r + (below - i) // n_cols - 1, c + width - 1)
        for start in range(i, below, n_cols):
            regions[start : start + width] = [region] * width
    return tuple(region for region in regions if region is not None)


def _grid(hs: list[HRule], vs: list[VRule], min_column: float) -> Grid | None:
    ruled_ys = _positions([h[2] for h in hs])
    if len(ruled_ys) < 2:
        return None
    sub_rows = _sub_rows(vs, ruled_ys)
    ys = sorted(ruled_ys + sub_rows)
    xs = _positions([v[2] for v in vs])
    n_rows, n_cols = len(ys) - 1, len(xs) - 1
    if n_rows < MIN_ROWS or n_cols < MIN_COLS:
        return None
    widths = sorted(b - a for a, b in pairwise(xs))
    if widths[len(widths) // 2] < min_column:
        # A lattice finer than the text on it is a pattern, not a table: the IRS
        # tax tables draw short rules making a 98 x 80 "grid" of ~7 pt columns
        # that would slice "Tax Table" into "Tax | T | able".
        return None
    parent = list(range(n_rows * n_cols))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    v_cov = _coverage(vs, xs, ys)
    h_cov = _coverage(hs, ys, xs)
    for y in sub_rows:
        # The rules' common end is a border for every column of the row, as a drawn rule would be.
        h_cov[ys.index(y)] = [float("inf")] * n_cols
    row_need = [BORDER_COVERAGE * (ys[r + 1] - ys[r]) for r in range(n_rows)]
    col_need = [BORDER_COVERAGE * (xs[c + 1] - xs[c]) for c in range(n_cols)]
    for r in range(n_rows):
        for c in range(n_cols):
            if c + 1 < n_cols and v_cov[c + 1][r] < row_need[r]:
                parent[find(r * n_cols + c + 1)] = find(r * n_cols + c)
            if r + 1 < n_rows and h_cov[r + 1][c] < col_need[c]:
                parent[find((r + 1) * n_cols + c)] = find(r * n_cols + c)
    regions = _rectangles([find(i) for i in range(n_rows * n_cols)], n_rows, n_cols)
    if len(set(regions)) < MIN_ROWS * MIN_COLS:
        return None
    return Grid(tuple(xs), tuple(ys), regions, (xs[0], ys[0], xs[-1], ys[-1]), n_cols)


def find_grids(rules_h: list[HRule], rules_v: list[VRule], spans: Sequence[Span]) -> list[Grid]:
    """Ruled grids on a page, from its rules; ``spans`` (its text) sets the narrowest plausible column."""
    heights = sorted(sp.bbox[3] - sp.bbox[1] for sp in spans)
    min_column = MIN_COLUMN_HEIGHTS * heights[len(heights) // 2] if heights else 0.0
    grids = []
    for hs, vs in _components(_merge(rules_h), _merge(rules_v)):
        grid = _grid(hs, vs, min_column)
        if grid is not None:
            grids.append(grid)
    return grids


Region = tuple[int, int, int, int]
# A text line inside one cell: (text, y-centre of its line, x of its first character).
Line = tuple[str, float, float]


def _clusters(ys: list[float], gap: float) -> list[float]:
    out: list[float] = []
    for y in sorted(ys):
        if not out or y - out[-1] > gap:
            out.append(y)
    return out


# A grid whose median column is narrower than this many text-line heights (the
# page's median) is a pattern, not a table.
MIN_COLUMN_HEIGHTS = 1.5

# A gap between two pieces of one line wider than this share of the line
# height is a word space (files that position words without space characters).
WORD_GAP = 0.25

# What a position inside a spanned cell holds.
_COVERED = Cell("", covered=True)

# A piece of a line inside one cell: (x0, x1, height, text).
Piece = tuple[float, float, float, str]


def _line_text(pieces: list[Piece]) -> str:
    if len(pieces) == 1:
        return pieces[0][3].strip()  # most cell lines are one span: nothing to sort or space
    out = ""
    prev_x1 = None
    for x0, x1, height, text in sorted(pieces):
        if prev_x1 is not None and x0 - prev_x1 > WORD_GAP * height and out[-1:] != " " and text[:1] != " ":
            out += " "
        out += text
        prev_x1 = x1
    return out.strip()


def _cut(span: Span, xs: tuple[float, ...]) -> list[tuple[str, float, float]]:
    """Split a span at the grid's column lines, placing characters by even spacing.

    MuPDF sometimes puts two cells in one span (``03/25/2016     07/01/2015``
    in the CA WARN report); most spans lie in one cell and are not cut.
    """
    x0, _, x1, _ = span.bbox
    lo, hi = bisect_right(xs, x0 + SNAP), bisect_left(xs, x1 - SNAP)
    if lo >= hi or not span.text:
        return [(span.text, x0, x1)]
    inner = xs[lo:hi]
    text = span.text
    step = (x1 - x0) / len(text)

    def centre(i: int) -> float:
        return x0 + i * step + step / 2

    # Characters run left to right, so a column's piece ends at the first character whose centre
    # passes the next column line: one binary search per piece, not a step per character.
    pieces: list[tuple[str, float, float]] = []
    start = 0
    while start < len(text):
        col = bisect_right(inner, centre(start))
        end = len(text) if col == len(inner) else bisect_left(range(len(text)), inner[col], start + 1, key=centre)
        # The end written as the last character's start plus a step: the same float the per-character
        # definition gave (x0 + end * step can differ in the last bit).
        pieces.append((text[start:end], x0 + start * step, x0 + (end - 1) * step + step))
        start = end
    return pieces


def fill(grid: Grid, spans: Sequence[Span]) -> Table:
    """Build the table from ``grid`` and the page's visible text spans.

    Spans go to the cell under their centre (cut at column lines first). A
    grid row that holds several text rows without rules between them (the
    NICS state list) is split into text rows when most of its cells have
    exactly one text line per row.
    """
    by_region: dict[Region, dict[float, list[Piece]]] = {}
    tenths = Tenths()
    for span in spans:
        height = span.bbox[3] - span.bbox[1]
        cy = (span.bbox[1] + span.bbox[3]) / 2
        for text, x0, x1 in _cut(span, grid.xs):
            region = grid.region_at((x0 + x1) / 2, cy)
            if region is not None:
                by_region.setdefault(region, {}).setdefault(tenths[span.line_y], []).append((x0, x1, height, text))
    cell_lines: dict[Region, list[Line]] = {}
    for region, by_line in by_region.items():
        lines = []
        for y, pieces in by_line.items():
            text = _line_text(pieces)
            if text:
                lines.append((text, y, min(pieces)[0]))
        cell_lines[region] = sorted(lines, key=itemgetter(1, 2)) if len(lines) > 1 else lines
    bands = [_row_bands(grid, r, cell_lines) for r in range(len(grid.ys) - 1)]
    starts = [0]
    for b in bands:
        starts.append(starts[-1] + len(b))
    # Cells are immutable: every covered position holds the same one.
    rows = [[_COVERED] * grid.n_cols for _ in range(starts[-1])]
    for region in set(grid.regions):
        r0, c0, r1, c1 = region
        lines = cell_lines.get(region, [])
        if r0 == r1 and len(bands[r0]) > 1 and _fits(lines, bands[r0]):
            for text, y, _ in lines:
                rows[starts[r0] + _band_of(y, bands[r0])][c0] = Cell(text, colspan=c1 - c0 + 1)
            continue
        # A cell of one line (most) already holds its text stripped and not empty: what the join would give.
        text = lines[0][0] if len(lines) == 1 else join_pieces([t for t, _, _ in lines])
        rows[starts[r0]][c0] = Cell(text, rowspan=starts[r1 + 1] - starts[r0], colspan=c1 - c0 + 1)
    grid_rows = tuple(tuple(r) for r in rows)
    return Table(grid_rows, header_rows=header_rows(grid_rows))


def header_rows(rows: Sequence[Sequence[Cell]]) -> int:
    """How many rows the header has: the first, and each next one naming the sub-columns of a span above it.

    Row ``k`` extends the header when row ``k - 1`` has a cell spanning
    columns that row ``k`` splits into at least two named cells, and row ``k``
    holds no figure. A one-row header (and every table without spans) stays 1.
    """
    count = 1
    while count < len(rows) - 1:
        above, row = rows[count - 1], rows[count]
        if any(is_figure(cell.text) for cell in row):
            break
        named = [c for c, cell in enumerate(row) if cell.text and not cell.covered]
        spans = [(c, c + cell.colspan) for c, cell in enumerate(above) if cell.colspan > 1 and not cell.covered]
        if not any(sum(lo <= c < hi for c in named) >= 2 for lo, hi in spans):
            break
        count += 1
    return count


def _band_of(y: float, bands: list[float]) -> int:
    """The band nearest ``y``, the upper of two as near: ``bands`` rise (``_clusters``), so two neighbours decide."""
    i = bisect_left(bands, y)
    if i == len(bands) or (i and y - bands[i - 1] <= bands[i] - y):
        return i - 1
    return i


def _fits(lines: list[Line], bands: list[float]) -> bool:
    """One text line per band: the cell follows the row's text rows."""
    return len(lines) == len(bands) and len({_band_of(y, bands) for _, y, _ in lines}) == len(bands)


def _row_bands(grid: Grid, r: int, cell_lines: dict[Region, list[Line]]) -> list[float]:
    """The text-row centres of grid row ``r``; a single entry when it is one row of text."""
    own = {reg for reg in grid.regions[r * grid.n_cols : (r + 1) * grid.n_cols] if reg[0] == reg[2] == r}
    filled = [cell_lines[reg] for reg in own if cell_lines.get(reg)]
    bands = _clusters([y for lines in filled for _, y, _ in lines], ROW_GAP)
    if len(bands) < 2 or len(filled) < MIN_COLS:
        return [grid.ys[r]]
    fitting = sum(1 for lines in filled if _fits(lines, bands))
    return bands if fitting >= SPLIT_SHARE * len(filled) else [grid.ys[r]]
