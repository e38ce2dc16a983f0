"""Furniture on short documents (2-5 pages): what one page can show, and the rule that fired in the report.

The documents are real PDFs written here with PyMuPDF (A5, body text in 10 pt,
heads and footers in 8 pt in the page bands) and read back by docsan's extractor.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pymupdf
import pytest

from docsan.api import clean_file
from docsan.config import Config, ExtractConfig
from docsan.extract import load
from docsan.stages.furniture import Furniture

WIDTH, HEIGHT = 420, 595
BODY = (
    "The knowledge base export writes one file per collection and keeps the metadata of every record with it. "
    "Operators check the export against the source before the files are handed over to the archive team."
)


def _pdf(
    path: Path, pages: int, head, footer=None, number=None, *, title_in_body: str | None = None, book: bool = False
) -> Path:
    """``head``/``footer``/``number``: a function of the page number (1-based) giving the line, or None.

    ``book``: even pages set their head flush right, as book layouts do.
    """
    doc = pymupdf.open()
    for n in range(1, pages + 1):
        page = doc.new_page(width=WIDTH, height=HEIGHT)
        if head:
            width = pymupdf.get_text_length(head(n), fontname="helv", fontsize=8)
            x = WIDTH - 42 - width if book and n % 2 == 0 else 42
            page.insert_text((x, 34), head(n), fontname="helv", fontsize=8)
        if footer:
            page.insert_text((42, HEIGHT - 24), footer(n), fontname="helv", fontsize=8)
        if number:
            page.insert_text((WIDTH / 2 - 10, HEIGHT - 24), number(n), fontname="helv", fontsize=8)
        y = 80
        if title_in_body and n == 1:
            page.insert_text((42, y), title_in_body, fontname="helv", fontsize=10)
            y += 30
        rect = pymupdf.Rect(42, y, WIDTH - 42, HEIGHT - 80)
        page.insert_textbox(rect, f"Page {n} body. " + BODY * 3, fontname="helv", fontsize=10)
    doc.save(path)
    doc.close()
    return path


def _removed(path: Path, **options) -> list[tuple[str, int, str]]:
    doc = load(path, ExtractConfig(ocr="never"))
    return [(c.code, c.page, c.text.strip()) for c in Furniture(**options)(doc).changes]


def test_alternating_heads_on_three_pages_go_even_the_one_printed_once(tmp_path: Path) -> None:
    heads = {1: "Northwind Data Systems - Annual Report 2023", 0: "Chapter 2 - Knowledge Base Export"}
    path = _pdf(tmp_path / "a.pdf", 3, lambda n: heads[n % 2], number=lambda n: f"- {n} -", book=True)
    removed = _removed(path)
    assert ("furniture.short.alternating_header", 2, "Chapter 2 - Knowledge Base Export") in removed
    assert {(p, t) for _, p, t in removed} >= {(1, heads[1]), (3, heads[1]), (1, "- 1 -"), (2, "- 2 -")}
    # Off: the even head printed once stays, the recurrence rules alone cannot see it.
    assert not any(t == heads[0] for _, _, t in _removed(path, short_documents=False))


def test_two_pages_with_different_heads_each_printed_once(tmp_path: Path) -> None:
    heads = {1: "Northwind Data Systems - Annual Report 2023", 2: "Chapter 2 - Knowledge Base Export"}
    removed = _removed(_pdf(tmp_path / "b.pdf", 2, lambda n: heads[n]))
    assert {(code, p) for code, p, _ in removed} == {
        ("furniture.short.alternating_header", 1),
        ("furniture.short.alternating_header", 2),
    }


def test_a_head_the_title_page_also_prints_in_its_body(tmp_path: Path) -> None:
    title = "Northwind Data Systems - Annual Report 2023"
    path = _pdf(tmp_path / "c.pdf", 2, lambda n: title, title_in_body=title)
    removed = _removed(path)
    assert [(code, p) for code, p, t in removed if t == title] == [
        ("furniture.short.header", 1),
        ("furniture.short.header", 2),
    ]
    doc = Furniture()(load(path, ExtractConfig(ocr="never"))).document
    assert title in doc.pages[0].text  # the body's copy stays


def test_a_single_page_shows_its_own_page_number(tmp_path: Path) -> None:
    removed = _removed(_pdf(tmp_path / "d.pdf", 1, None, number=lambda n: "1"))
    assert removed == [("furniture.short.page_number", 1, "1")]
    removed = _removed(_pdf(tmp_path / "e.pdf", 1, None, number=lambda n: "- 251 -"))
    assert removed == [("furniture.short.page_number", 1, "- 251 -")]
    # A bare number that is not the page's own and not set off: a figure, it stays.
    assert _removed(_pdf(tmp_path / "f.pdf", 1, None, number=lambda n: "251")) == []


def test_body_sized_headings_at_the_top_of_two_pages_are_not_heads(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for title in ("1.1 Scope of the export", "1.2 Sources of the export"):
        page = doc.new_page(width=WIDTH, height=HEIGHT)
        page.insert_text((42, 34), title, fontname="helv", fontsize=12)
        page.insert_textbox(pymupdf.Rect(42, 80, WIDTH - 42, HEIGHT - 80), BODY * 3, fontname="helv", fontsize=10)
    path = tmp_path / "g.pdf"
    doc.save(path)
    assert _removed(path) == []


def test_the_reason_names_the_rule(tmp_path: Path) -> None:
    heads = {1: "Northwind Data Systems - Annual Report 2023", 2: "Chapter 2 - Knowledge Base Export"}
    doc = load(_pdf(tmp_path / "h.pdf", 2, lambda n: heads[n]), ExtractConfig(ocr="never"))
    (change, _) = Furniture()(doc).changes
    assert change.reason.startswith("running header (short document:")
    stats = Furniture()(doc).stats
    assert stats["short_alternating_headers"] == 2


@pytest.mark.parametrize("name", ["ca_warn_report_16p.pdf", "zh_yancheng_bond_prospectus_tables_1p.pdf"])
def test_the_corpus_negative_guards_keep_their_data(corpus: Path, name: str) -> None:
    text = {"ca_warn_report_16p.pdf": "Layoff Permanent"}.get(
        name, "偿还债务的能力很强，受不利经济环境的影响不大，违约风险很低"
    )
    extracted = clean_file(corpus / name, Config(stages=()).with_overrides(extract={"ocr": "never"})).text
    cleaned = clean_file(corpus / name, Config().with_overrides(extract={"ocr": "never"})).text
    assert cleaned.count(text) == extracted.count(text) > 0


def _dmca_paragraphs(corpus: Path) -> list[str]:
    """Real prose: the DMCA summary's long paragraphs of pages 3-4, each on one line."""
    with pymupdf.open(corpus / "dmca_copyright_office_summary_18p.pdf") as pdf:
        texts = [" ".join(b[4].split()) for n in (2, 3) for b in pdf[n].get_text("blocks")]
    return [t for t in texts if len(t) > 300 and t[0].isupper()]


def _text_pages(pages: list[list[str]]) -> str:
    """Form-feed pages of paragraphs (lines wrapped at 76 columns, as a PDF-to-text tool writes them)."""

    def wrap(paragraph: str) -> str:
        return "\n".join(w for line in paragraph.split("\n") for w in textwrap.wrap(line, 76))

    return "\f".join("\n\n".join(wrap(p) for p in page) for page in pages) + "\n"


def _cut(paragraph: str) -> tuple[str, str]:
    """A paragraph cut by a page break after a full line, mid-sentence: the second half starts in lower case."""
    lines = textwrap.wrap(paragraph, 76)
    k = next(i for i in range(2, len(lines)) if lines[i][:1].islower() and lines[i - 1][-1] not in ".:;")
    return " ".join(lines[:k]), " ".join(lines[k:])


def test_a_head_a_paragraph_runs_across_goes_from_a_two_page_text_file(corpus: Path, tmp_path: Path) -> None:
    first, second, third = _dmca_paragraphs(corpus)[:3]
    head, rest = _cut(second)
    title, even_head = "Northwind Data Systems - Annual Report 2023", "Chapter 2 - Knowledge Base Export"
    path = tmp_path / "two.txt"
    path.write_text(_text_pages([[title, first, head, "1"], [even_head, rest, third, "2"]]), encoding="utf-8")
    removed = _removed(path)
    assert ("furniture.short.mid_paragraph_header", 2, even_head) in removed
    # Page 1's first line is a title as often as a head: on text pages nothing tells, and it stays.
    assert not any(t == title for _, _, t in removed)
    cleaned = clean_file(path, Config()).text
    assert even_head not in cleaned and title in cleaned
    assert f"{head} {rest}" in " ".join(cleaned.split())  # reflow joined the halves once the head was gone

    # A page break at a paragraph's end proves nothing: the line after it may be a heading, and stays.
    path.write_text(_text_pages([[title, first, second, "1"], [even_head, third, "2"]]), encoding="utf-8")
    assert not any(t == even_head for _, _, t in _removed(path))


def test_a_line_between_the_halves_that_ends_a_sentence_is_the_text_s(corpus: Path, tmp_path: Path) -> None:
    first, second, third = _dmca_paragraphs(corpus)[:3]
    head, rest = _cut(second)
    one_line = third.split(". ")[0][:70] + "."
    path = tmp_path / "three.txt"
    path.write_text(
        _text_pages([["Annual Report 2023", first, head, "1"], ["Chapter 2", one_line, rest, "2"]]), encoding="utf-8"
    )
    assert not any(code.startswith("furniture.short.mid_paragraph") for code, _, _ in _removed(path))


def test_a_footnote_between_the_halves_stays(corpus: Path, tmp_path: Path) -> None:
    first, second = _dmca_paragraphs(corpus)[:2]
    head, rest = _cut(second)
    note = "1 See section 1201 of the Copyright Act, as amended in October 1998"
    path = tmp_path / "note.txt"
    path.write_text(_text_pages([["Annual Report 2023", first, head, note, "1"], ["Chapter 2", rest, "2"]]), "utf-8")
    removed = {t for _, _, t in _removed(path)}
    assert note not in removed and "Chapter 2" not in removed


def test_a_short_last_page_keeps_its_footer_block_at_the_edge(corpus: Path, tmp_path: Path) -> None:
    paragraphs = _dmca_paragraphs(corpus)
    footer = "Confidential - for internal use only"
    pages = [
        ["Annual Report 2023", paragraphs[0], f"{footer}\n1"],
        ["Annual Report 2023", paragraphs[1], f"{footer}\n2"],
        ["Annual Report 2023", paragraphs[2][:120], f"{footer}\n3"],  # two lines of text on the last page
    ]
    path = tmp_path / "last.txt"
    path.write_text(_text_pages(pages), encoding="utf-8")
    removed = {(p, t) for _, p, t in _removed(path)}
    assert {(p, footer) for p in (1, 2, 3)} <= removed
    assert (3, "3") in removed


def test_a_footer_printed_on_the_page_number_s_line_goes_even_on_one_page(tmp_path: Path) -> None:
    footer = "Confidential - for internal use only"
    removed = _removed(_pdf(tmp_path / "i.pdf", 1, None, footer=lambda n: footer, number=lambda n: "- 251 -"))
    assert sorted(removed) == [
        ("furniture.short.beside_page_number", 1, footer),
        ("furniture.short.page_number", 1, "- 251 -"),
    ]
    # Beside a figure no rule confirms as a page number, the line is the page's own.
    assert _removed(_pdf(tmp_path / "j.pdf", 1, None, footer=lambda n: footer, number=lambda n: "251")) == []


SHORT_CORPUS = [
    "schools_major_contribution_report_5p.pdf",
    "jal_traffic_data_tables_5p.pdf",
    "zh_resume_near_duplicate_paragraphs_2p.pdf",
    "zh_anhui_land_use_standard_tables_1p.pdf",
    "zh_yancheng_bond_prospectus_tables_1p.pdf",
    "la_precinct_bulletin_2014_p1.pdf",
    "nics_background_checks_2015_11.pdf",
]


@pytest.mark.parametrize("name", SHORT_CORPUS)
def test_the_corpus_s_short_documents_keep_their_titles_and_first_lines(corpus: Path, name: str) -> None:
    # The rules that one break or one printed line shows fire on none of them, and the first line
    # stays unless it recurs as a running head over a run of pages (the schools report's, sideways).
    doc = load(corpus / name, ExtractConfig(ocr="never"))
    result = Furniture()(doc)
    codes = {c.code for c in result.changes}
    assert not codes & {
        "furniture.short.beside_page_number",
        "furniture.short.mid_paragraph_header",
        "furniture.short.mid_paragraph_footer",
    }
    first = next(line for line in doc.pages[0].text.splitlines() if line.strip())
    how = {c.code for c in result.changes if c.page == 1 and c.text.strip() == first.strip()}
    assert first in result.document.pages[0].text or how == {"furniture.running_header"}
