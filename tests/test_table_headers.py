"""Table headers on real files: multi-row and spanned headers are part of the grid, and a table
continued over pages is one table whose header is not repeated as data (issue 9)."""

from __future__ import annotations

from pathlib import Path

from docsan.config import Config, ExtractConfig
from docsan.extract.pdf import load_pdf
from docsan.model import Block, BlockKind, Document
from docsan.pipeline import CleanResult, Pipeline
from docsan.render import table_to_markdown

NO_OCR = ExtractConfig(ocr="never")
NICS_COLUMNS = ["Permit", "Handgun", "Long Gun", "*Other", "**Multiple", "Admin"]
NICS_GROUPS = ["Pre-Pawn", "Redemption", "Returned/Disposition", "Rentals", "Private Sale"]


def _clean(path: Path) -> CleanResult:
    config = Config().with_overrides(extract={"ocr": "never"})
    return Pipeline.from_config(config).run(load_pdf(path, config.extract))


def _tables(doc: Document) -> list[Block]:
    return [b for _, b in doc.blocks() if b.kind is BlockKind.TABLE and b.table is not None]


def test_nics_header_rows_are_in_the_grid(corpus: Path) -> None:
    (block,) = _tables(load_pdf(corpus / "nics_background_checks_2015_11.pdf", NO_OCR))
    table = block.table
    assert table is not None and table.n_cols == 25
    # Title, group names, column names: three header rows, then the states.
    assert table.header_rows == 3
    title, groups, names = table.text_rows()[:3]
    assert title[0] == "NICS Firearm Background Checks November - 2015" and table.rows[0][0].colspan == 25
    assert [g for g in groups if g][:5] == NICS_GROUPS
    pre_pawn = groups.index("Pre-Pawn")
    assert table.rows[1][pre_pawn].colspan == 3
    assert names[:7] == ["State / Territory", *NICS_COLUMNS] and names[-1] == "Totals"
    assert names[pre_pawn : pre_pawn + 3] == ["Handgun", "Long Gun", "*Other"]
    assert table.text_rows()[3][:2] == ["Alabama", "18,870"]


def test_nics_markdown_names_every_column(corpus: Path) -> None:
    text = _clean(corpus / "nics_background_checks_2015_11.pdf").text
    title, header, rule, first = text.split("\n\n", 1)[0], *text.split("\n\n", 1)[1].split("\n")[:3]
    assert title == "NICS Firearm Background Checks November - 2015"
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert len(cells) == 25 and rule == "|" + "|".join(["---"] * 25) + "|"
    assert cells[:7] == ["State / Territory", *NICS_COLUMNS]
    assert cells[7:10] == ["Pre-Pawn Handgun", "Pre-Pawn Long Gun", "Pre-Pawn *Other"]
    assert cells[-1] == "Totals"
    assert first.startswith("| Alabama | 18,870 | 23,022 |")


def test_a_table_continued_without_its_header_is_one_table(corpus: Path) -> None:
    # The WARN report's notices run over pages 1-15 with the header printed once, on page 1.
    path = corpus / "ca_warn_report_16p.pdf"
    pages = load_pdf(path, NO_OCR).pages
    per_page = sum(b.table.n_rows for p in pages[:15] for b in p.blocks if b.table is not None and b.table.n_cols == 7)
    result = _clean(path)
    notices = [b for b in _tables(result.document) if b.table.n_cols == 7]  # type: ignore[union-attr]
    assert len(notices) == 1
    table = notices[0].table
    assert table is not None and table.n_rows == per_page
    assert table.text_rows()[0][:4] == ["Notice Date", "Effective", "Received", "Company"]
    # Page 2's first notice is a data row of the one table, not a second table's header.
    markdown = table_to_markdown(table)
    assert markdown.splitlines().count("|---|---|---|---|---|---|---|") == 1
    assert "| 07/17/2015 | 09/18/2015 | 07/21/2015 | Boeing Company |" in markdown
    joins = [c for c in result.report.changes if c.reason == "table continued from page 1: joined to it"]
    assert [c.page for c in joins] == list(range(2, 16))
    # The monthly summary (9 columns) that starts on page 15 is another table: not joined to the notices,
    # but joined to its own continuation on page 16.
    (summary,) = [b for b in _tables(result.document) if b.table.n_cols == 9]  # type: ignore[union-attr]
    assert "September 2015" in summary.text


def test_a_repeated_header_is_dropped_once_per_page_and_reported(corpus: Path) -> None:
    result = _clean(corpus / "schools_major_contribution_report_5p.pdf")
    header = "| Last Name | First Name | Address | City | State | Zip | Occupation | Employer | Date | Amount |"
    assert result.text.count(header) == 1
    dropped = [c for c in result.report.changes if c.reason == "repeated header of the table from page 1"]
    assert [c.page for c in dropped] == [2, 3, 4, 5] and all(c.text == header for c in dropped)
    (table,) = _tables(result.document)
    assert "Carter" in table.text and "Anders" in table.text  # the last page's rows are in the one table


def test_a_document_list_continued_on_an_odd_page_is_joined_despite_the_shifted_margin(corpus: Path) -> None:
    # The classification society's rules print even and odd pages 29 pt apart: same width, other x.
    result = _clean(corpus / "bureau_veritas_diesel_engines_23p.pdf")
    joins = [c for c in result.report.changes if c.reason.startswith("table continued from page")]
    assert {c.page for c in joins} >= {5}
    assert "| 45 | Test program resulting from FMEA (for engine control system) (9) |" in result.text
    table = next(b.table for b in _tables(result.document) if b.table and "Test program resulting from FMEA" in b.text)
    rows = [r[0] for r in table.text_rows()]
    assert rows.index("44") + 1 == rows.index("45") and rows.count("No") == 1
