"""Every letter PyMuPDF alone extracts and docsan's output lacks is accounted for in the report.

For each PDF of the shared corpus (its golden output and report, OCR off) and
of the hostile suite (the folder run's outputs and reports, OCR on), the
letters of plain ``page.get_text()`` that are missing from docsan's output
must be covered by the report: a change that removed or shortened text (by a
stage or by the extraction: hidden and white text, a text layer set aside, a
running head, a repeated header, a duplicate paragraph...) or a page the
report lists as a gap of a partial result. Letters are counted after NFKC, so
a ligature and its letters count alike; more letters in the output (OCR of a
scan, a table header named per column) are never a deficit.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pymupdf
import pytest
import regex

from tests.conftest import CORPUS
from tests.golden_outputs import GOLDEN
from tests.test_hostile import HOSTILE, folder_run

_LETTER = regex.compile(r"\p{L}")
_CUT = regex.compile(r"pages (\d+)-(\d+) not read")
# What the output may lack without a record: MuPDF's plain text and its dictionary can differ by
# a stray glyph (a space read as a letter); never a line.
SLACK = 10


def letters(text: str | None) -> int:
    return len(_LETTER.findall(unicodedata.normalize("NFKC", text or "")))


def _page_letters(path: Path) -> dict[int, int] | None:
    try:
        with pymupdf.open(path) as doc:
            return {i + 1: letters(page.get_text()) for i, page in enumerate(doc)}
    except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase):
        return None  # MuPDF cannot read it either: nothing to compare with


def unaccounted(path: Path, output: str, report: dict) -> tuple[int, int]:
    """(letters missing from ``output`` and not covered by ``report``, letters PyMuPDF extracts)."""
    per_page = _page_letters(path)
    if per_page is None:
        return 0, 0
    changes = [*report["extraction"], *(c for stage in report["stages"] for c in stage["changes"])]
    removed = sum(max(0, letters(c["text"]) - letters(c.get("replacement"))) for c in changes if c["kind"] != "finding")
    gap_pages = {g["page"] for g in report["gaps"] if g["page"] is not None}
    for gap in report["gaps"]:
        # A cut by max_pages names the pages it left out: "pages 10001-12000 not read: ...".
        if gap["page"] is None and (cut := _CUT.match(gap["reason"])):
            gap_pages |= set(range(int(cut[1]), int(cut[2]) + 1))
    missing = sum(per_page.values()) - letters(output)
    return max(0, missing - removed - sum(per_page.get(p, 0) for p in gap_pages)), sum(per_page.values())


def _corpus_cases() -> list[str]:
    if not CORPUS.is_dir():
        return []
    return sorted(p.name.removesuffix(".report.json") for p in (GOLDEN / "corpus").glob("*.pdf.report.json"))


@pytest.mark.parametrize("name", _corpus_cases())
def test_corpus_letters_missing_from_the_output_are_in_the_report(name: str) -> None:
    report = json.loads((GOLDEN / "corpus" / f"{name}.report.json").read_text(encoding="utf-8"))
    output = (GOLDEN / "corpus" / f"{name}.txt").read_text(encoding="utf-8")
    lost, total = unaccounted(CORPUS / name, output, report)
    assert lost <= SLACK, f"{name}: {lost} of {total} letters left out without a record"


@pytest.mark.skipif(not (HOSTILE / "pdfs").is_dir(), reason="shared hostile files not found")
def test_hostile_letters_missing_from_the_output_are_in_the_report() -> None:
    out, _, _ = folder_run()
    reports = json.loads((out.parent / "report.json").read_text(encoding="utf-8"))
    checked, failures = 0, []
    for report in reports:
        src = Path(report["source"])
        target = out / (src.name + ".txt")
        if not target.is_file():
            continue
        lost, total = unaccounted(src, target.read_text(encoding="utf-8"), report)
        checked += 1
        if lost > SLACK:
            failures.append(f"{src.name}: {lost} of {total} letters")
    assert checked >= 40, f"only {checked} hostile PDFs had an output and a report"
    assert not failures, "letters left out without a record: " + "; ".join(failures)
