"""The table stage on constructed grids, pipe text, real extractor grids and corpus PDFs."""

from __future__ import annotations

import functools
from pathlib import Path

import pdfplumber
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cli.main import app
from docsan.api import clean_document, clean_file, clean_text
from docsan.config import Config, ExtractConfig, TablePolicy
from docsan.extract import load
from docsan.model import Block, BlockKind, Cell, Document, DocumentKind, Page, Source, Table
from docsan.render import render_text
from docsan.stages import build_stage
from docsan.stages.table_repair import TableRepair
from docsan.tables.pipes import parse_pipe_table
from docsan.tables.repair import RepairResult, _repair, is_settled, repair_grid

# The two structural stages, in their default order: what these tests are about.
CONFIG = Config(stages=("furniture", "tables"))
RATING = "偿还债务的能力很强，受不利经济环境的影响不大，违约风险很低"


def _doc(*blocks: Block) -> Document:
    return Document((Page(1, tuple(blocks)),), kind=DocumentKind.PDF)


def _table_block(table: Table) -> Block:
    return Block(
        "\n".join(" | ".join(r) for r in table.text_rows()), BlockKind.TABLE, Source.TABLE_EXTRACTOR, table=table
    )


def _only_table(doc: Document) -> Table:
    tables = [b.table for _, b in doc.blocks() if b.kind is BlockKind.TABLE and b.table is not None]
    assert len(tables) == 1
    return tables[0]


# -- the incident's pipe text -------------------------------------------------


def test_incident_address_row_becomes_one_cell() -> None:
    result = clean_text("地址| | | | |地址", CONFIG)
    table = _only_table(result.document)
    assert table.text_rows() == [["地址"]]
    assert result.text.count("地址") == 1
    changes = result.report.stage("tables").changes
    merged = [c for c in changes if c.code == "tables.span_merged"]
    assert merged and merged[0].text == "| 地址 |  |  |  |  | 地址 |"
    assert merged[0].replacement == "| 地址 |"
    stats = result.report.stage("tables").stats
    assert stats["cells_merged"] == 1 and stats["cols_dropped"] == 5 and stats["pipe_tables_parsed"] == 1


def test_repeated_merged_header_collapses_and_body_stays() -> None:
    text = "| a | a | a |\n|---|---|---|\n| 1 | 2 | 3 |\n| x | y | z |"
    result = clean_text(text, CONFIG)
    table = _only_table(result.document)
    assert table.header_rows == 1
    assert table.text_rows() == [["a", "", ""], ["1", "2", "3"], ["x", "y", "z"]]
    assert table.rows[0][0].colspan == 3 and table.rows[0][1].covered
    assert result.text.splitlines()[0] == "| a |  |  |"


def test_all_empty_rows_and_columns_dropped_header_kept() -> None:
    table = Table.from_strings(
        [["Name", "", "Total"], ["", "", ""], ["North", "", "10"], ["", "", ""], ["South", "", "12"]]
    )
    result = TableRepair()(_doc(_table_block(table)))
    fixed = _only_table(result.document)
    assert fixed.text_rows() == [["Name", "Total"], ["North", "10"], ["South", "12"]]
    assert fixed.header_rows == 1
    assert {len(r) for r in fixed.rows} == {2}
    assert result.stats["rows_dropped"] == 2 and result.stats["cols_dropped"] == 1
    dropped = [c for c in result.changes if c.code == "tables.empty_row"]
    assert len(dropped) == 2 and all(c.replacement is None for c in dropped)


def test_equal_figures_and_body_neighbours_are_not_merged() -> None:
    # Adjacent equal values in a body row are data (credit used == credit granted).
    table = Table.from_strings(
        [["Bank", "Granted", "Used"], ["CITIC", "205,088.00", "205,088.00"], ["A", "Yes", "Yes"]]
    )
    result = repair_grid(table)
    assert result.table == table and result.cells_merged == 0


def test_value_gap_value_merges_in_body_rows_too() -> None:
    table = Table.from_strings([["k", "v1", "v2", "v3"], ["Region", "North", "", "North"]])
    result = repair_grid(table)
    assert result.table.text_rows() == [["k", "v1", "v2", "v3"], ["Region", "North", "", ""]]
    assert result.table.rows[1][1].colspan == 3


# -- policies -----------------------------------------------------------------


def _spanned() -> Table:
    """Plan type spans two rows (extractor-marked); the header spans two columns (collapsed copies)."""
    return Table(
        (
            (Cell("Plan"), Cell("Enrolment"), Cell("Enrolment")),
            (Cell("GMC", rowspan=2), Cell("Anthem"), Cell("164,380")),
            (Cell("", covered=True), Cell("Kaiser"), Cell("74,620")),
            (Cell("COHS"), Cell("CalOptima"), Cell("780,000")),
        )
    )


def test_policy_once_keeps_each_value_once() -> None:
    fixed = repair_grid(_spanned(), "once").table
    rows = fixed.text_rows()
    assert rows[0] == ["Plan", "Enrolment", ""] and rows[2][0] == ""
    assert sum(r.count("GMC") for r in rows) == 1
    assert fixed.rows[1][0].rowspan == 2 and fixed.rows[0][1].colspan == 2


def test_policy_fill_repeats_the_value_in_every_spanned_cell() -> None:
    fixed = repair_grid(_spanned(), "fill").table
    rows = fixed.text_rows()
    assert rows[0] == ["Plan", "Enrolment", "Enrolment"]
    assert [r[0] for r in rows[1:]] == ["GMC", "GMC", "COHS"]
    assert not any(c.covered or c.rowspan > 1 or c.colspan > 1 for r in fixed.rows for c in r)


def test_policy_html_renders_rowspan_and_colspan() -> None:
    doc = TableRepair(policy="html")(_doc(_table_block(_spanned()))).document
    html = render_text(doc, table_html=True)
    assert '<th colspan="2">Enrolment</th>' in html
    assert '<td rowspan="2">GMC</td>' in html
    assert html.count("GMC") == 1
    # Without the HTML switch the same document renders as a Markdown table.
    assert render_text(doc).startswith("| Plan | Enrolment |  |")


@pytest.mark.parametrize("policy", ["once", "fill", "html"])
def test_cli_table_policy_flag(tmp_path: Path, policy: str) -> None:
    src = tmp_path / "t.txt"
    src.write_text("| a | a | a |\n|---|---|---|\n| 1 | 2 | 3 |\n", encoding="utf-8")
    cfg = tmp_path / "c.toml"
    cfg.write_text('stages = ["furniture", "tables"]\n', encoding="utf-8")
    out = CliRunner().invoke(app, ["clean", str(src), "--config", str(cfg), "--table-policy", policy])
    assert out.exit_code == 0, out.output
    expected = {
        "once": "| a |  |  |",
        "fill": "| a | a | a |",
        "html": '<th colspan="3">a</th>',
    }[policy]
    assert expected in out.output


def test_bad_policy_is_a_config_error() -> None:
    with pytest.raises(Exception, match="tables"):
        build_stage("tables", {"policy": "merge"})


# -- pipe text recognition ----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Revenue | Costs",
        "Chapter 2 | Roles and separation of duties",
        '|:250250025|:202020"’86". 1234',
        "a | b | c\nplain prose line",
    ],
)
def test_prose_with_pipes_is_not_a_table(text: str) -> None:
    assert parse_pipe_table(text) is None


def test_escaped_pipes_stay_inside_cells() -> None:
    table = parse_pipe_table("| expr | meaning | note |\n|---|---|---|\n| a \\| b | either | x |")
    assert table is not None
    assert table.text_rows()[1] == ["a | b", "either", "x"]


def test_pipe_split_is_linear_on_adversarial_input() -> None:
    # 200k pipes and backslashes: the fixed-width lookbehind split stays linear.
    line = "\\|" * 100_000 + "|" * 100_000
    table = parse_pipe_table(line)
    assert table is not None and table.n_cols > 1


# -- real extractor grids (pdfplumber) and corpus PDFs -------------------------


@functools.cache
def _plumber_tables(path: Path) -> list[Table]:
    with pdfplumber.open(path) as pdf:
        return [Table.from_strings(t) for t in pdf.pages[0].extract_tables()]


def test_prospectus_ratings_kept_in_all_four_rows_of_a_real_grid(corpus: Path) -> None:
    tables = _plumber_tables(corpus / "zh_yancheng_bond_prospectus_tables_1p.pdf")
    doc = _doc(*(_table_block(t) for t in tables))
    for policy in ("once", "fill", "html"):
        result = TableRepair(policy=policy)(doc)
        text = render_text(result.document).replace("\n", "").replace(" ", "")
        assert text.count(RATING) == 4, policy
        # The credit table's equal figures in one row are data, kept twice.
        assert text.count("205,088.00|205,088.00") == 1
        assert result.stats["cells_merged"] == 0


def test_prospectus_ratings_survive_the_pipeline(corpus: Path) -> None:
    path = corpus / "zh_yancheng_bond_prospectus_tables_1p.pdf"
    original = load(path, ExtractConfig(ocr="never"))
    result = clean_file(path, CONFIG)
    # PyMuPDF wraps the rating over two lines; count both halves.
    for part in ("偿还债务的能力很强", "违约风险很低"):
        assert original.text.count(part) == 4
        assert result.text.count(part) == 4


@pytest.mark.parametrize(
    "name", ["epa_spanning_cells.pdf", "zh_anhui_land_use_standard_tables_1p.pdf", "dhcs_mmc_enrollment_row_span.pdf"]
)
def test_real_merged_cell_grids_lose_no_value(corpus: Path, name: str) -> None:
    for table in _plumber_tables(corpus / name):
        fixed = repair_grid(table).table
        before = sorted(c.text for r in table.rows for c in r if c.text)
        after = sorted(c.text for r in fixed.rows for c in r if c.text)
        assert after == before
        assert len({len(r) for r in fixed.rows}) == 1
        assert fixed.header_rows == 1


def test_one_cell_per_line_table_is_reported_not_rewritten(corpus: Path) -> None:
    doc = load(corpus / "zh_lab_report_table_1p.pdf", ExtractConfig(ocr="never"))
    result = TableRepair()(doc)
    assert result.stats["cell_per_line_tables"] >= 1
    findings = [c for c in result.changes if c.code == "tables.cell_per_line"]
    assert findings and all(c.kind == "finding" and c.replacement is None for c in findings)
    assert any("白细胞计数(WBC)" in c.text for c in findings)
    assert result.document == doc


def test_prose_pages_report_no_cell_per_line_table(corpus: Path) -> None:
    doc = load(corpus / "dmca_copyright_office_summary_18p.pdf", ExtractConfig(ocr="never"))
    assert TableRepair()(doc).stats["cell_per_line_tables"] == 0


def test_markdown_file_tables_become_table_blocks(tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    md.write_text("# Report\n\n| City | City | Pop |\n|---|---|---|\n| Oslo | | 700 |\n\nEnd.\n", encoding="utf-8")
    result = clean_file(md, CONFIG)
    table = _only_table(result.document)
    assert table.text_rows() == [["City", "Pop"], ["Oslo", "700"]]
    assert "End." in result.text


def test_input_document_not_mutated() -> None:
    doc = _doc(_table_block(_spanned()), Block("地址| | | | |地址"))
    snapshot = render_text(doc)
    clean_document(doc, CONFIG)
    assert render_text(doc) == snapshot


# -- properties of the grid repair ---------------------------------------------

_cells = st.sampled_from(["", "", "a", "b", "地址", "1", "2.0"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_cells, min_size=1, max_size=6), min_size=1, max_size=6), st.sampled_from(["once", "html"]))
def test_repair_keeps_every_distinct_value_of_every_row(rows: list[list[str]], policy: str) -> None:
    table = Table.from_strings(rows)
    fixed = repair_grid(table, policy).table  # type: ignore[arg-type]
    # Rectangular, and no value vanishes from a row that keeps any text.
    assert len({len(r) for r in fixed.rows}) <= 1
    kept = [r for r in table.text_rows() if any(r)]
    assert len(kept) == fixed.n_rows
    for old, new in zip(kept, fixed.text_rows(), strict=True):
        assert {v for v in old if v} == {v for v in new if v}
        # Only values with letters may lose copies (merged spans); figures never do.
        for v in {v for v in old if v and not v[0].isalpha()}:
            assert new.count(v) == old.count(v)


# Cells that make a grid repair_grid has work for: equal values with a letter (spaced apart), figures,
# blanks, whitespace, separators str.split removes; spans laid over covered positions (or not quite);
# and changes that may spoil a plain grid (an odd cell, a short row).
_TEXTS = st.sampled_from(["", " ", "a", "a ", "b", "b\x1c", "c", "d", "e", "1", "2", "\x1cd"])
_ODD_CELLS = st.sampled_from(
    [Cell("a", rowspan=2), Cell("a", colspan=2), Cell("a", rowspan=0), Cell("", covered=True), Cell(" ", covered=True)]
)


@st.composite
def _grids(draw: st.DrawFn) -> tuple[tuple[Cell, ...], ...]:
    width, height = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    rows = [[Cell(draw(_TEXTS)) for _ in range(width)] for _ in range(height)]
    for _ in range(draw(st.integers(0, 2))):
        edit = draw(st.sampled_from(["span", "span", "cell", "short row"]))
        r, c = draw(st.integers(0, height - 1)), draw(st.integers(0, width - 1))
        if c >= len(rows[r]):
            continue
        if edit == "span":
            # Mostly inside the grid, over empty covered positions, holding text; now and then not.
            rowspan = min(draw(st.sampled_from([1, 2, 2, 3])), height - r + draw(st.sampled_from([0, 0, 0, 1])))
            colspan = min(draw(st.sampled_from([1, 2, 2, 3])), width - c + draw(st.sampled_from([0, 0, 0, 1])))
            for rr in range(r, min(r + rowspan, height)):
                for cc in range(c, min(c + colspan, len(rows[rr]))):
                    rows[rr][cc] = Cell(draw(st.sampled_from(["", "", "", " "])), covered=True)
            rows[r][c] = Cell(draw(st.sampled_from(["a", "b", "c", ""])), rowspan=rowspan, colspan=colspan)
        elif edit == "cell":
            rows[r][c] = draw(_ODD_CELLS)
        elif rows[r]:
            rows[r].pop()
    return tuple(tuple(row) for row in rows)


@st.composite
def _spanned_grids(draw: st.DrawFn) -> tuple[tuple[Cell, ...], ...]:
    # Distinct values (nothing to merge) under spans laid over empty covered positions, which may overlap,
    # reach past the grid, cover text or hold none.
    width, height = draw(st.integers(2, 4)), draw(st.integers(2, 4))
    rows = [[Cell(f"v{r}{c}") for c in range(width)] for r in range(height)]
    for _ in range(draw(st.integers(1, 2))):
        r, c = draw(st.integers(0, height - 1)), draw(st.integers(0, width - 1))
        past = draw(st.sampled_from([0, 0, 0, 0, 0, 1]))  # now and then past the grid's edge
        rowspan = draw(st.integers(1, height - r + past)) if draw(st.integers(0, 9)) else 0
        colspan = draw(st.integers(1, width - c + past))
        for rr in range(r, min(r + rowspan, height)):
            for cc in range(c, min(c + colspan, width)):
                rows[rr][cc] = Cell(draw(st.sampled_from([""] * 9 + [" "])), covered=True)
        rows[r][c] = Cell(draw(st.sampled_from([f"s{r}{c}"] * 5 + [""])), rowspan=rowspan, colspan=colspan)
    return tuple(tuple(row) for row in rows)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_grids(), _spanned_grids()), st.integers(-1, 3), st.sampled_from(["once", "fill", "html"]))
def test_a_grid_called_settled_is_one_the_repair_builds_again(
    rows: tuple[tuple[Cell, ...], ...], header_rows: int, policy: TablePolicy
) -> None:
    # repair_grid returns a settled table without repairing it: the repair must have given the same.
    table = Table(rows, header_rows=header_rows)
    if is_settled(table, policy):
        assert _repair(table, policy) == RepairResult(table, list(range(len(rows))), set(), 0, 0, 0)


def test_two_spans_over_one_position_are_not_settled() -> None:
    # "A" spans down and "B" across onto the same covered position: the repair gives it to "B" and "A"
    # loses its span, so the grid is not one it builds again.
    covered = Cell("", covered=True)
    rows = ((Cell("x"), Cell("A", rowspan=2), Cell("y")), (Cell("B", colspan=2), covered, Cell("z")))
    table = Table(rows, header_rows=0)
    assert _repair(table, "once").table != table and not is_settled(table, "once")
