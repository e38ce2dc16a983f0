"""Time docsan's PDF extraction (no OCR) against plain PyMuPDF on the same files, in one run.

Run from the repository root: ``python -m bench.bench_extract``.

``run()`` returns seconds for: plain ``page.get_text()``; docsan extraction
with tables; docsan extraction without tables; cumulative phases (MuPDF's
dict pass alone, plus our span processing) whose differences say where the
time goes; and PyMuPDF's ``find_tables()`` against docsan's
whole extraction on a few table pages (why docsan has its own grid finder). The corpus is the shared corpus's text-layer
files (scans and broken files excluded: they measure tesseract, not us).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pymupdf

from bench.common import corpus_pdfs, floor_pass
from docsan.config import ExtractConfig
from docsan.extract import layout
from docsan.extract.pdf import load_pdf
from docsan.tables import ruled

# Files without a usable text layer, or that cannot be opened: not part of a text-extraction timing.
EXCLUDED = (
    "broken_",
    "zh_admin_penalty",
    "zh_capital_book",
    "zh_cv_book",
    "linn_sequencer",
    "huckfinn",
    "grumman",
    "table_multi_row",
    "memo_scan",
    "zh_feida",
    "odd_truetype",
)
REPEATS = 5
# Table pages on which PyMuPDF's own table finder is timed against ours (it is
# too slow to run on every page of the corpus inside a benchmark).
TABLE_SAMPLE = (
    ("epa_spanning_cells.pdf", 1),
    ("dhcs_mmc_enrollment_row_span.pdf", 1),
    ("nics_background_checks_2015_11.pdf", 1),
    ("zh_yancheng_bond_prospectus_tables_1p.pdf", 1),
    ("zh_anhui_land_use_standard_tables_1p.pdf", 1),
    ("ca_warn_report_16p.pdf", 2),
)


def text_layer_files(corpus: Path | None = None) -> list[Path]:
    corpus = corpus or corpus_pdfs()
    return [p for p in sorted(corpus.glob("*.pdf")) if not p.name.startswith(EXCLUDED)] if corpus else []


def _dict_pass(path: Path) -> None:
    with pymupdf.open(path) as doc:
        for page in doc:
            page.get_text("dict", flags=layout.TEXT_FLAGS)


def _read_pages(path: Path) -> None:
    with pymupdf.open(path) as doc:
        for page in doc:
            layout.read_page(
                page,
                lambda page=page: [tuple(i["bbox"]) for i in page.get_image_info()],
                lambda pt: ruled.plausible(pt.rules_h, pt.rules_v),
            )


METHODS: dict[str, Callable[[Path], object]] = {
    "plain": floor_pass,
    "dict": _dict_pass,
    "read": _read_pages,
    "no_tables": lambda p: load_pdf(p, ExtractConfig(ocr="never", tables=False)),
    "full": lambda p: load_pdf(p, ExtractConfig(ocr="never")),
}


def _interleaved(files: list[Path]) -> dict[str, float]:
    """Seconds per method, summed over files, each the best of REPEATS.

    The machine is shared and its load drifts over seconds: every method runs
    on a file right after the others, so all of them see the same load, and
    the minimum of each is its least disturbed run.
    """
    best = {name: [float("inf")] * len(files) for name in METHODS}
    for _ in range(REPEATS):
        for i, f in enumerate(files):
            for name, fn in METHODS.items():
                t0 = time.perf_counter()
                fn(f)
                best[name][i] = min(best[name][i], time.perf_counter() - t0)
    return {name: sum(ts) for name, ts in best.items()}


def _table_finders(corpus: Path) -> dict[str, float]:
    """PyMuPDF ``find_tables()`` vs docsan's grid detection, each on the same sample pages."""
    sample = [(corpus / name, page) for name, page in TABLE_SAMPLE if (corpus / name).exists()]
    t0 = time.perf_counter()
    for path, page in sample:
        with pymupdf.open(path) as doc:
            doc[page - 1].find_tables()
    pymupdf_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for path, page in sample:
        load_pdf(path, ExtractConfig(ocr="never"), pages=[page])
    docsan_s = time.perf_counter() - t0
    return {
        "pages": len(sample),
        "pymupdf_find_tables_s": round(pymupdf_s, 3),
        "docsan_whole_extraction_s": round(docsan_s, 3),
    }


def run() -> dict:
    files = text_layer_files()
    if not files:
        raise SystemExit("shared corpus not found (set DOCSAN_SHARED)")
    load_pdf(files[0], ExtractConfig(ocr="never"))  # load the word list once, outside the timings
    pages = sum(floor_pass(f) for f in files)
    t = _interleaved(files)
    return {
        "files": len(files),
        "pages": pages,
        "plain_get_text_s": round(t["plain"], 3),
        "docsan_s": round(t["full"], 3),
        "docsan_no_tables_s": round(t["no_tables"], 3),
        "ratio_docsan_vs_plain": round(t["full"] / t["plain"], 2),
        "ratio_no_tables_vs_plain": round(t["no_tables"] / t["plain"], 2),
        # Where the time goes, as differences between cumulative phases:
        # MuPDF's dict (with vectors) vs plain text; our per-span pass (visibility,
        # lines, rules); quality scoring + reading order + headings; tables.
        "phase_dict_extraction_s": round(t["dict"], 3),
        "phase_span_processing_s": round(t["read"] - t["dict"], 3),
        "phase_quality_layout_s": round(t["no_tables"] - t["read"], 3),
        "phase_tables_s": round(t["full"] - t["no_tables"], 3),
        "table_finder_sample": _table_finders(files[0].parent),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
