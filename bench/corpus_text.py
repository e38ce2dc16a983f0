"""The shared corpus's text layer, extracted once with PyMuPDF, for the stage micro-benchmarks.

The corpus is found by :func:`bench.common.corpus_pdfs`, the tests' rule too.
"""

from __future__ import annotations

from functools import cache

import pymupdf

from bench.common import corpus_pdfs


@cache
def paragraphs() -> tuple[str, ...]:
    """Every non-empty text block of every readable PDF, in corpus order."""
    out = []
    folder = corpus_pdfs()
    if folder is None:
        raise SystemExit("shared corpus not found (set DOCSAN_SHARED)")
    for path in sorted(folder.glob("*.pdf")):
        try:
            doc = pymupdf.open(path)
            if doc.needs_pass or doc.page_count == 0:
                continue
        except (RuntimeError, ValueError):
            continue  # the corpus's deliberately broken files
        with doc:
            for page in doc:
                out.extend(b[4].strip() for b in page.get_text("blocks") if b[6] == 0 and b[4].strip())
    return tuple(out)
