"""Ruled tables on real corpus pages: grids, merged cells, and no duplicate loose text."""

from __future__ import annotations

import random
from bisect import bisect_right
from pathlib import Path

import pytest

from docsan.config import ExtractConfig
from docsan.extract.pdf import load_pdf
from docsan.model import Block, BlockKind, Document, Source, Table
from docsan.tables.ruled import SNAP, Span, _components, _cut

NO_OCR = ExtractConfig(ocr="never")


def _load(corpus: Path, name: str, **kw) -> Document:
    return load_pdf(corpus / name, NO_OCR, **kw)


def _tables(doc: Document) -> list[Block]:
    return [b for _, b in doc.blocks() if b.kind is BlockKind.TABLE]


def _loose_text(doc: Document) -> str:
    return "\n".join(b.text for _, b in doc.blocks() if b.kind is not BlockKind.TABLE)


def _row_with(table: Table, text: str) -> list[str]:
    return next(r for r in table.text_rows() if any(text in c for c in r))


def _check_grid(table: Table) -> None:
    """Every row has the same width; every covered position is inside some span."""
    assert len({len(r) for r in table.rows}) == 1
    claimed = set()
    for i, row in enumerate(table.rows):
        for j, cell in enumerate(row):
            if not cell.covered:
                claimed |= {(i + a, j + b) for a in range(cell.rowspan) for b in range(cell.colspan)}
    covered = {(i, j) for i, row in enumerate(table.rows) for j, c in enumerate(row) if c.covered}
    assert covered <= claimed


def test_bond_prospectus_tables_keep_repeated_cells(corpus: Path) -> None:
    doc = _load(corpus, "zh_yancheng_bond_prospectus_tables_1p.pdf")
    tables = _tables(doc)
    assert len(tables) == 2
    assert all(t.source is Source.TABLE_EXTRACTOR and t.table is not None for t in tables)
    ratings = next(t.table for t in tables if t.table and "主体信用评级" in t.text)
    _check_grid(ratings)
    meaning = "偿还债务的能力很强，受不利经济环境的影响不大，违约风险很低"
    assert sum(c.text == meaning for r in ratings.rows for c in r) == 4
    row = [c for c in _row_with(ratings, "2021") if c]
    assert row[:4] == ["2021", "AA+", meaning, "联合资信评估有限公司"]
    # Table text is not repeated as loose lines.
    assert "违约风险很低" not in _loose_text(doc)
    assert "徽商银行南京中山北路支行" not in _loose_text(doc)


def test_epa_header_spans_all_columns(corpus: Path) -> None:
    doc = _load(corpus, "epa_spanning_cells.pdf")
    tables = [t.table for t in _tables(doc) if t.table]
    big = max(tables, key=lambda t: t.n_rows)
    _check_grid(big)
    title = big.rows[0][0]
    assert title.text == "Improved operation scenario" and title.colspan == big.n_cols == 6
    assert all(c.covered for c in big.rows[0][1:])
    assert _row_with(big, "Server closets") == ["Server closets", "1,505", "1,580", "1,643", "1,673", "1,689"]
    assert "1,505" not in _loose_text(doc)


def test_dhcs_row_spans(corpus: Path) -> None:
    doc = _load(corpus, "dhcs_mmc_enrollment_row_span.pdf")
    (block,) = _tables(doc)
    table = block.table
    assert table is not None
    _check_grid(table)
    assert table.text_rows()[0] == ["Plan Type", "County", "Plan Name", "Totals"]
    gmc = table.rows[1][0]
    assert gmc.text == "GMC" and gmc.rowspan > 3
    assert table.rows[2][0].covered and table.rows[2][2].text == "Health Net"
    assert "Anthem Blue Cross" not in _loose_text(doc)


def test_nics_unruled_rows_inside_ruled_columns(corpus: Path) -> None:
    doc = _load(corpus, "nics_background_checks_2015_11.pdf")
    table = max((t.table for t in _tables(doc) if t.table), key=lambda t: t.n_rows)
    _check_grid(table)
    assert table.n_cols == 25
    alabama = _row_with(table, "Alabama")
    assert alabama[0] == "Alabama" and alabama[1] == "18,870" and alabama[-1] == "71,137"
    assert _row_with(table, "Alaska")[-1] == "7,095"


def test_anhui_merged_header_cells(corpus: Path) -> None:
    doc = _load(corpus, "zh_anhui_land_use_standard_tables_1p.pdf")
    tables = [t.table for t in _tables(doc) if t.table]
    assert len(tables) >= 2
    first = next(t for t in tables if "用地指标基准值" in str(t.text_rows()))
    _check_grid(first)
    header = first.rows[0]
    assert header[0].text == "公路技术等级" and header[0].rowspan == 2
    assert any(c.colspan == 2 for c in header)
    assert "高速公路" in [r[0] for r in first.text_rows()]


def test_ca_warn_rows_not_columns_on_every_page(corpus: Path) -> None:
    doc = _load(corpus, "ca_warn_report_16p.pdf")
    assert len(doc.pages) == 16
    for page in doc.pages:
        assert any(b.kind is BlockKind.TABLE for b in page.blocks), f"page {page.number}"
    first = next(b.table for b in doc.pages[0].blocks if b.table)
    assert first is not None
    assert first.text_rows()[0][:4] == ["Notice Date", "Effective", "Received", "Company"]
    row = _row_with(first, "Maxim Integrated Product")
    assert row[4] == "San Jose" and row[-1] == "Closure Permanent"
    # Data rows live in the tables only: "Layoff Permanent" is not loose text.
    assert "Layoff Permanent" not in _loose_text(doc)


@pytest.mark.parametrize("tables_on", [True, False])
def test_tables_option(corpus: Path, tables_on: bool) -> None:
    doc = load_pdf(corpus / "epa_spanning_cells.pdf", ExtractConfig(ocr="never", tables=tables_on))
    assert bool(_tables(doc)) is tables_on
    assert "Server closets" in doc.text


def _touching_groups(hs: list, vs: list) -> list[set[tuple[str, int]]]:
    """The components by definition: a horizontal and a vertical rule are joined when they cross (within SNAP)."""

    def crosses(h: tuple, v: tuple) -> bool:
        return h[0] - SNAP <= v[2] <= h[1] + SNAP and v[0] - SNAP <= h[2] <= v[1] + SNAP

    seen: set[tuple[str, int]] = set()
    groups = []
    for start in [("h", i) for i in range(len(hs))] + [("v", j) for j in range(len(vs))]:
        if start in seen:
            continue
        group, todo = {start}, [start]
        while todo:
            kind, i = todo.pop()
            others = [("v", j) for j in range(len(vs)) if kind == "h" and crosses(hs[i], vs[j])]
            others += [("h", j) for j in range(len(hs)) if kind == "v" and crosses(hs[j], vs[i])]
            for o in others:
                if o not in group:
                    group.add(o)
                    todo.append(o)
        seen |= group
        groups.append(group)
    return groups


@pytest.mark.parametrize("seed", range(40))
def test_rule_components_are_the_touching_groups(seed: int) -> None:
    rnd = random.Random(seed)

    def rule() -> tuple[float, float, float]:
        a = float(rnd.randint(0, 20) * 5) if rnd.random() < 0.5 else rnd.uniform(0, 100)
        return (a, a + rnd.uniform(0, 60), float(rnd.randint(0, 20) * 5) if rnd.random() < 0.5 else rnd.uniform(0, 100))

    hs, vs = [rule() for _ in range(rnd.randint(0, 25))], [rule() for _ in range(rnd.randint(0, 25))]
    want = _touching_groups(hs, vs)
    got = _components(hs, vs)
    # same groups, in order of their first horizontal rule, then of their first vertical one
    assert [({("h", hs.index(h)) for h in g[0]} | {("v", vs.index(v)) for v in g[1]}) for g in got] == want


def _cut_by_character(text: str, x0: float, x1: float, inner: tuple[float, ...]) -> list[tuple[str, float, float]]:
    """The definition of a span cut at column lines: each character, evenly spaced, joins the piece of its column."""
    step = (x1 - x0) / len(text)
    pieces: list[tuple[str, float, float]] = []
    for i, ch in enumerate(text):
        cx0 = x0 + i * step
        col = bisect_right(inner, cx0 + step / 2)
        if pieces and bisect_right(inner, pieces[-1][1] + step / 2) == col:
            pieces[-1] = (pieces[-1][0] + ch, pieces[-1][1], cx0 + step)
        else:
            pieces.append((ch, cx0, cx0 + step))
    return pieces


@pytest.mark.parametrize("seed", range(20))
def test_span_cut_at_column_lines_places_each_character(seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(500):
        xs = tuple(sorted(round(rnd.uniform(0, 300), rnd.choice([0, 1, 3])) for _ in range(rnd.randint(1, 8))))
        x0 = rnd.uniform(-20, 300)
        x1 = x0 + rnd.choice([rnd.uniform(0, 320), rnd.uniform(0, 10)])
        text = "".join(rnd.choice("ab 1.") for _ in range(rnd.randint(1, 60)))
        got = _cut(Span(text, (x0, 0.0, x1, 10.0), 5.0), xs)
        inner = tuple(x for x in xs if x0 + SNAP < x < x1 - SNAP)
        # bit for bit: the cell text and the pieces' boxes are what later steps compare
        assert got == (_cut_by_character(text, x0, x1, inner) if inner else [(text, x0, x1)])
