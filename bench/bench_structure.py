"""Speed of the furniture and tables stages, against plain PyMuPDF extraction measured in the same run.

    .venv/bin/python bench/bench_structure.py

``run()`` returns seconds and pages per second for: plain ``page.get_text()``
over the chosen corpus files (the baseline), the furniture stage and the
tables stage on the same documents, and the two stages on a long synthetic
document (the corpus pages repeated up to ``LONG_PAGES`` pages, renumbered) so
the cost of fuzzy grouping on many distinct edge lines shows. Ratios are
stage time / baseline time: below 1 means the stage costs less than reading
the PDF did.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import corpus_pdfs, floor_seconds  # noqa: E402
from docsan.config import ExtractConfig  # noqa: E402
from docsan.extract import load  # noqa: E402
from docsan.model import Document  # noqa: E402
from docsan.stages.furniture import Furniture  # noqa: E402
from docsan.stages.table_repair import TableRepair  # noqa: E402

FILES = (
    "fedreg_2020-17221_15p.pdf",
    "irs_i1040nr_2007_50p.pdf",
    "zh_dbdq_2018q1_report_22p.pdf",
    "dmca_copyright_office_summary_18p.pdf",
    "cancer_council_breast_cancer_guide_76p.pdf",
    "ca_warn_report_16p.pdf",
    "bureau_veritas_diesel_engines_23p.pdf",
    "zh_yancheng_bond_prospectus_tables_1p.pdf",
)
LONG_PAGES = 2000
REPEAT = 3


def _best(fn, repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _long_document(docs: list[Document]) -> Document:
    pages = [p for d in docs for p in d.pages]
    long = [replace(pages[i % len(pages)], number=i + 1) for i in range(LONG_PAGES)]
    return Document(tuple(long), kind=docs[0].kind, name="long")


def run() -> dict:
    folder = corpus_pdfs()
    if folder is None:
        raise SystemExit("shared corpus not found (set DOCSAN_SHARED)")
    paths = [folder / name for name in FILES if (folder / name).is_file()]
    docs = [load(p, ExtractConfig(ocr="never")) for p in paths]
    n_pages = sum(len(d.pages) for d in docs)
    furniture, tables = Furniture(), TableRepair()

    baseline, _ = floor_seconds(paths, REPEAT)
    t_furniture = _best(lambda: [furniture(d) for d in docs])
    t_tables = _best(lambda: [tables(d) for d in docs])
    long = _long_document(docs)
    t_long_furniture = _best(lambda: furniture(long), repeat=1)
    t_long_tables = _best(lambda: tables(long), repeat=1)
    removed = sum(furniture(d).stats["lines_removed"] for d in docs)
    return {
        "files": len(paths),
        "pages": n_pages,
        "baseline_pymupdf_get_text_s": round(baseline, 4),
        "furniture_s": round(t_furniture, 4),
        "tables_s": round(t_tables, 4),
        "furniture_pages_per_s": round(n_pages / t_furniture),
        "tables_pages_per_s": round(n_pages / t_tables),
        "baseline_pages_per_s": round(n_pages / baseline),
        "furniture_over_baseline": round(t_furniture / baseline, 3),
        "tables_over_baseline": round(t_tables / baseline, 3),
        "furniture_lines_removed": removed,
        "long_doc_pages": LONG_PAGES,
        "long_furniture_s": round(t_long_furniture, 3),
        "long_tables_s": round(t_long_tables, 3),
        "long_furniture_pages_per_s": round(LONG_PAGES / t_long_furniture),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
