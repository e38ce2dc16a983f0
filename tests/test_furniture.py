"""The furniture stage on real corpus PDFs, text files with form feeds, and constructed pages.

Each corpus file is extracted and cleaned once per session (``_run``), so the
whole module reads every file a single time.
"""

from __future__ import annotations

import functools
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docsan.api import clean_text
from docsan.config import Config, ExtractConfig
from docsan.extract import load
from docsan.model import BBox, Block, BlockKind, Document, DocumentKind, Page, Table
from docsan.report import StageResult
from docsan.stages import build_stage, furniture
from docsan.stages.furniture import PAGE_NUMBER, RUNNING_FOOTER, RUNNING_HEADER, Furniture, line_key, line_keys
from docsan.text.pagenum import parse_page_number

CONFIG = Config(stages=("furniture", "tables"))


@functools.cache
def _run(path: Path) -> tuple[Document, StageResult]:
    doc = load(path, ExtractConfig(ocr="never"))
    return doc, Furniture()(doc)


def _lines(doc: Document) -> list[tuple[int, str]]:
    return [(p.number, line.strip()) for p in doc.pages for b in p.blocks for line in b.text.split("\n")]


def _pages_with_line(doc: Document, text: str) -> set[int]:
    return {n for n, line in _lines(doc) if line == text}


def _pages_containing(doc: Document, text: str) -> set[int]:
    return {p.number for p in doc.pages if text in p.text}


# -- corpus: headers and footers go -------------------------------------------


def test_fedreg_header_and_gpo_slugs_removed(corpus: Path) -> None:
    before, result = _run(corpus / "fedreg_2020-17221_15p.pdf")
    after = result.document
    header = "Federal Register / Vol. 85, No. 152 / Thursday, August 6, 2020 / Proposed Rules"
    assert len(_pages_containing(before, header)) >= 14
    assert _pages_containing(after, header) == set()
    # The GPO slugs are printed white on the white page: the extractor drops
    # them as hidden text (and reports it on every page), so they never reach
    # the stage and are absent from the output either way.
    assert sum(c.code == "extract.white_text" for c in before.extraction) == len(before.pages)
    for slug in ("jbell on DSKJLSW7X2PROD with PROPOSALS", "E:\\FR\\FM\\06AUP1.SGM"):
        assert slug not in before.text and slug not in after.text, slug
    # The page numbers 47698.. went too, and the body stayed.
    assert not any(line == str(47697 + n) for n, line in _lines(after))
    assert "Lion Air" in after.text
    removed = sum(len(c.text) for c in result.changes)
    assert removed < 0.1 * len(before.text)
    assert {c.code for c in result.changes} <= {RUNNING_HEADER.code, RUNNING_FOOTER.code, PAGE_NUMBER.code}


def test_irs_footer_and_dash_page_numbers_removed(corpus: Path) -> None:
    before, result = _run(corpus / "irs_i1040nr_2007_50p.pdf")
    after = result.document
    footer = "Instructions for Form 1040NR"
    assert len(_pages_with_line(before, footer)) >= 45
    assert _pages_with_line(after, footer) == set()
    dashed = {f"-{n}-" for n in range(1, 51)} | {f"- {n} -" for n in range(1, 51)}
    assert sum(1 for _, line in _lines(before) if line in dashed) >= 45
    assert [line for _, line in _lines(after) if line in dashed] == []


def test_zh_running_header_and_page_numbers_removed(corpus: Path) -> None:
    before, result = _run(corpus / "zh_dbdq_2018q1_report_22p.pdf")
    after = result.document
    header = "东北电气发展股份有限公司2018 年第一季度报告全文"
    assert len(_pages_with_line(before, header)) == len(before.pages)
    assert _pages_with_line(after, header) == set()
    assert all(any(b.text.strip() == str(p.number) for b in p.blocks) for p in before.pages)
    assert not any(b.text.strip() == str(p.number) for p in after.pages for b in p.blocks)
    assert result.stats["page_numbers"] == len(before.pages)


def test_dmca_three_line_header_removed_title_kept(corpus: Path) -> None:
    before, result = _run(corpus / "dmca_copyright_office_summary_18p.pdf")
    after = result.document
    for line in ("The Digital Millennium Copyright Act of 1998", "Copyright Office Summary", "December 1998"):
        assert len(_pages_with_line(before, line) - {1}) == len(before.pages) - 1
        assert _pages_with_line(after, line) - {1} == set()
    assert not any(line.startswith("Page ") and line[5:].isdigit() for _, line in _lines(after))
    # The title page's title is set larger than the running head, and its
    # date sits mid-page: one-off lines, kept.
    assert "THE DIGITAL MILLENNIUM COPYRIGHT ACT OF 1998" in after.pages[0].text
    assert "December 1998" in after.pages[0].text


def test_schools_sideways_header_removed_donors_kept(corpus: Path) -> None:
    before, result = _run(corpus / "schools_major_contribution_report_5p.pdf")
    after = result.document
    for line in ("Vote Yes for Strong Schools", "Major Contribution Report"):
        assert len(_pages_with_line(before, line)) == 5
        assert _pages_with_line(after, line) == set()
    assert "Kiernat" in after.text and "Kiernat" in before.text


# -- corpus: data that recurs at page edges survives ---------------------------


def _cells_as_lines(doc: Document) -> Document:
    """The document as an extractor without a table finder gives it: each table one cell per line, as text."""
    pages = []
    for page in doc.pages:
        blocks = [
            Block(
                "\n".join(c.text for row in b.table.rows for c in row if c.text),
                BlockKind.TEXT,
                b.source,
                b.bbox,
                font_size=b.font_size,
            )
            if b.table is not None
            else b
            for b in page.blocks
        ]
        pages.append(page.with_blocks(blocks))
    return doc.with_pages(pages)


def test_ca_warn_layoff_rows_intact(corpus: Path) -> None:
    before, result = _run(corpus / "ca_warn_report_16p.pdf")
    count_before = before.text.count("Layoff Permanent")
    assert count_before > 200  # the manifest counts 296 in the report
    assert result.document.text.count("Layoff Permanent") == count_before
    assert result.stats["lines_removed"] == 0
    # The extractor finds the ruled table: its rows are table blocks, never furniture.
    assert sum(1 for p in before.pages for b in p.blocks if b.kind is BlockKind.TABLE) >= len(before.pages)
    # Without the grid (one cell per line, as PyMuPDF emits it) the value that
    # ends most pages is still recognised as data, because it fills the body too.
    flat = _cells_as_lines(before)
    assert flat.text.count("Layoff Permanent") == count_before
    flat_result = Furniture()(flat)
    assert flat_result.document.text.count("Layoff Permanent") == count_before
    assert flat_result.stats["groups_kept_as_data"] >= 1
    assert flat_result.stats["lines_removed"] == 0


# -- corpus: alternating (book) layouts --------------------------------------


def test_bureau_veritas_alternating_header_and_page_numbers(corpus: Path) -> None:
    before, result = _run(corpus / "bureau_veritas_diesel_engines_23p.pdf")
    after = result.document
    assert len(_pages_with_line(before, "Pt C, Ch 1, Sec 2")) == len(before.pages)
    assert _pages_with_line(after, "Pt C, Ch 1, Sec 2") == set()
    assert _pages_with_line(after, "Bureau Veritas") == set()
    numbers = {c.page for c in result.changes if c.code == PAGE_NUMBER.code}
    assert {n % 2 for n in numbers} == {0, 1}
    assert len(numbers) == len(before.pages)


def test_cancer_council_alternating_footers_with_tab(corpus: Path) -> None:
    _, result = _run(corpus / "cancer_council_breast_cancer_guide_76p.pdf")
    after = result.document
    footer_pages = {c.page for c in result.changes if c.code == RUNNING_FOOTER.code}
    # Even pages carry "NN <TAB> Cancer Council", odd pages "<Section> <TAB> NN".
    assert sum(1 for n in footer_pages if n % 2 == 0) >= 30
    assert sum(1 for n in footer_pages if n % 2 == 1) >= 15
    # Nothing is left in the footer line (y > 92% of the page) of any page:
    # short chapters whose name is printed once are caught by their slot.
    bottom = [
        (p.number, b.text) for p in after.pages for b in p.blocks if b.bbox and p.height and b.bbox.y0 > 0.92 * p.height
    ]
    assert bottom == []
    # The organisation is still named in the body (headings "Cancer Council" on pages 2 and 75).
    assert after.text.count("Cancer Council") >= 20


def test_ibm_alternating_footers_and_sampled_page_numbers(corpus: Path) -> None:
    before, result = _run(corpus / "ibm_redp5110_sampled_18p.pdf")
    after = result.document
    title = "Row and Column Access Control Support in IBM DB2 for i"
    assert len(_pages_with_line(before, title)) >= 5
    assert _pages_with_line(after, title) == set()
    assert result.stats["page_numbers"] >= 10


def test_page_of_only_furniture_becomes_empty(corpus: Path) -> None:
    before, result = _run(corpus / "fedreg_2020-17221_15p.pdf")
    emptied = [p.number for p0, p in zip(before.pages, result.document.pages, strict=True) if p0.text and not p.text]
    assert emptied and result.stats["pages_emptied"] == len(emptied)
    assert len(result.document.pages) == len(before.pages)


# -- text documents -----------------------------------------------------------

BODIES = [
    "Revenue grew in the north.\nCosts were flat.\nHiring slowed.",
    "The board met twice.\nNo dividend was declared.\nACME Corp Quarterly Report 2024 is due in May.",
    "Risks: currency, supply.\nOutlook unchanged.\nSee annex.",
    "Annex A lists sites.\nAnnex B lists staff.",
    "Contacts are below.\nEnd of report.",
]


def _paged_text(header: str) -> str:
    return "\f".join(f"{header}\n\n{body}\n\nPage {i} of {len(BODIES)}" for i, body in enumerate(BODIES, 1))


def test_text_with_form_feeds_loses_header_and_page_numbers() -> None:
    result = clean_text(_paged_text("ACME Corp Quarterly Report 2024 - Confidential"), CONFIG)
    text = result.text
    assert "Confidential" not in text
    assert "Page 3 of 5" not in text
    for body in BODIES:
        assert body in text
    stats = result.report.stage("furniture").stats
    assert stats["running_headers"] == len(BODIES)
    assert stats["page_numbers"] == len(BODIES)


def test_text_one_off_heading_survives() -> None:
    pages = _paged_text("ACME Corp Quarterly Report 2024 - Confidential").split("\f")
    pages[2] = "Appendix: methodology\n" + pages[2]
    result = clean_text("\f".join(pages), CONFIG)
    assert "Appendix: methodology" in result.text


def test_edge_text_that_also_fills_the_body_is_data() -> None:
    # Every page starts and ends with a row "Layoff Permanent", and the same
    # value fills the body: a repeated structure, not a running header.
    pages = [
        "\n".join(["Layoff Permanent", f"{i}0 workers", "Layoff Permanent", f"{i}1 workers", "Layoff Permanent"])
        for i in range(1, 6)
    ]
    text = "\f".join(pages)
    result = clean_text(text, CONFIG)
    assert result.text.count("Layoff Permanent") == text.count("Layoff Permanent")


# -- constructed pages --------------------------------------------------------


def _page(number: int, blocks: list[Block]) -> Page:
    return Page(number=number, blocks=tuple(blocks), width=600, height=800)


def test_a_block_running_from_the_body_into_the_bottom_band_loses_only_its_footer_line() -> None:
    # Four stacked lines over y 600-760 centre at 0.775, 0.825, 0.875 and 0.925 of the page: only
    # the last lies in the bottom band, so the block's first line alone does not make it body.
    pages = [
        _page(
            n,
            [
                Block(f"Body text number {n} is different.", bbox=BBox(50, 300, 550, 320)),
                Block(
                    f"Closing words {n}.\nMore of page {n}.\nEnd of page {n}.\nAcme annual review",
                    bbox=BBox(50, 600, 550, 760),
                ),
            ],
        )
        for n in range(1, 6)
    ]
    result = Furniture()(Document(tuple(pages), kind=DocumentKind.PDF))
    assert [p.blocks[1].text for p in result.document.pages] == [
        f"Closing words {n}.\nMore of page {n}.\nEnd of page {n}." for n in range(1, 6)
    ]


def test_table_blocks_are_never_furniture() -> None:
    table = Table.from_strings([["Name", "Total"], ["North", "10"]])
    pages = [
        _page(
            n,
            [
                Block("Name | Total\nNorth | 10", kind=BlockKind.TABLE, bbox=BBox(50, 20, 550, 60), table=table),
                Block(f"Body text number {n} is different.", bbox=BBox(50, 300, 550, 320)),
            ],
        )
        for n in range(1, 6)
    ]
    doc = Document(tuple(pages), kind=DocumentKind.PDF)
    result = Furniture()(doc)
    assert result.document == doc
    assert result.changes == []


def test_input_document_is_not_mutated(corpus: Path) -> None:
    doc = load(corpus / "dmca_copyright_office_summary_18p.pdf", ExtractConfig(ocr="never"))
    snapshot = doc.text
    Furniture()(doc)
    assert doc.text == snapshot


def test_options_validated() -> None:
    assert build_stage("furniture", {"band": 0.1}).band == 0.1
    with pytest.raises(Exception, match="furniture"):
        build_stage("furniture", {"band": 0.9})
    with pytest.raises(Exception, match="furniture"):
        build_stage("furniture", {"nope": 1})


# -- page-number forms --------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "value", "explicit"),
    [
        ("Page 3 of 10", 3, True),
        ("page 12", 12, True),
        ("第 3 页 共 10 页", 3, True),
        ("第2 页共6 页", 2, True),
        ("- 3 -", 3, False),
        ("-3-", 3, False),
        ("3 / 81", 3, False),
        ("47699", 47699, False),
        ("xiv", 14, False),
        ("III", 3, False),
    ],
)
def test_page_number_forms(line: str, value: int, explicit: bool) -> None:
    number = parse_page_number(line)
    assert number is not None
    assert (number.value, number.explicit) == (value, explicit)


@pytest.mark.parametrize("line", ["mix", "dim", "civic", "Page", "3 apples", "1.5", "2020-08-06", "-" * 10_000])
def test_not_page_numbers(line: str) -> None:
    assert parse_page_number(line) is None


def test_chat_messages_are_not_pages() -> None:
    pages = tuple(
        Page(n, (Block(f"Thanks for asking.\nAnswer number {n} differs.\nBest regards, the bot"),), role="assistant")
        for n in range(1, 6)
    )
    doc = Document(pages, kind=DocumentKind.CHAT)
    result = Furniture()(doc)
    assert result.document == doc and result.changes == []


def test_pipe_table_rows_repeated_at_page_tops_are_data() -> None:
    # A text export whose table continues over pages repeats its header row on
    # each page: that row is part of a table, not a running header.
    notes = [
        "North grew fastest.",
        "South was flat.",
        "East lost a client.",
        "West opened two sites.",
        "Totals follow.",
    ]
    pages = [f"| Region | Revenue | Growth |\n| R{i} | {i}00 | {i}% |\n\n{note}" for i, note in enumerate(notes, 1)]
    result = clean_text("\f".join(pages), CONFIG)
    assert result.text.count("| Region | Revenue | Growth |") == 5
    assert result.report.stage("furniture").changes == []


def _book_page(n: int, head: str, number: str, body: str) -> Page:
    """A book page: running head on top (flush left on even, right on odd pages), number at the foot."""
    x0 = 50 if n % 2 == 0 else 350
    return _page(
        n,
        [
            Block(head, bbox=BBox(x0, 30, x0 + 200, 40), font_size=9),
            Block(body, bbox=BBox(50, 100, 550, 700), font_size=11),
            Block(number, bbox=BBox(290, 760, 310, 770), font_size=9),
        ],
    )


def test_chapter_heads_change_per_chapter_and_roman_front_matter() -> None:
    bodies = [f"Paragraph {n}: " + " ".join(f"word{n * k}" for k in range(40)) for n in range(1, 15)]
    roman = ["i", "ii", "iii", "iv"]
    pages = [_book_page(n, "Preface", roman[n - 1], bodies[n - 1]) for n in range(1, 5)]
    heads = {5: "Chapter 1. Getting started", 10: "Chapter 2. Going further"}
    head = ""
    for n in range(5, 15):
        head = heads.get(n, head)
        # Even pages carry the book title, odd pages the chapter.
        pages.append(_book_page(n, "A Book About Things" if n % 2 == 0 else head, str(n - 4), bodies[n - 1]))
    doc = Document(tuple(pages), kind=DocumentKind.PDF)
    result = Furniture()(doc)
    after = result.document
    assert all(len(p.blocks) == 1 and p.blocks[0].text == bodies[p.number - 1] for p in after.pages)
    assert result.stats["page_numbers"] == 14
    codes = {(c.page, c.code) for c in result.changes}
    assert (7, RUNNING_HEADER.code) in codes and (11, RUNNING_HEADER.code) in codes


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="aΣς\u0301\u1100\u1161 \n\t1２\ufb01\u00a0İß\x00ｶﾞ", max_size=6), max_size=5))
def test_line_keys_are_each_texts_line_key(texts: list[str]) -> None:
    # the page's keys come from one pass over its joined lines: NFKC, case folding and the
    # substitutions must not reach across the join (combining marks, jamo, final sigma, a NUL of its own)
    assert line_keys(texts) == [line_key(t) for t in texts]


def test_str_split_and_the_key_pattern_agree_on_every_space_but_four() -> None:
    # line_key removes spaces by str.split unless the text holds one of the four it alone counts.
    every = "".join(map(chr, range(0x110000)))
    by_pattern = set("".join(furniture._SPACE.findall(every)))
    by_split = {c for c in every if c.isspace()}
    assert by_pattern ^ by_split == set(furniture._SPLIT_ONLY_SPACES)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ109٣ \t\n\x1c\x1f\x85\u00a0\u2028\u3000\u200b\ufb01ß", max_size=12))
def test_line_key_is_nfkc_folded_text_with_digit_runs_as_zero_and_no_spaces(text: str) -> None:
    assert line_key(text) == _key_by_definition(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=16))
def test_line_key_of_ascii_text_is_its_definition(text: str) -> None:
    # ASCII text takes steps of its own (lower case, every digit 0, "00" halved): the same key
    assert line_key(text) == _key_by_definition(text)


def _key_by_definition(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return furniture._SPACE.sub("", furniture._DIGITS.sub("0", folded))


def test_a_variant_joins_the_first_founded_of_the_groups_it_matches_equally() -> None:
    # "header" is as close to "headera" (on three pages, founded first) as to "headerb" (two pages):
    # it joins the first; the two are too far apart to be one group
    lines = [furniture._PageLines() for _ in range(3)]
    for page, key in ((0, "headera"), (1, "headera"), (2, "headera"), (0, "headerb"), (1, "headerb"), (2, "header")):
        block = len(lines[page].candidates)
        lines[page].candidates.append(furniture._Candidate(page, block, 0, key, key, "top", 0.05, True))
    groups = {frozenset(c.key for c in g) for g in Furniture()._group(lines, {})}
    assert groups == {frozenset({"headera", "header"}), frozenset({"headerb"})}
