"""The shared corpus's text layer, extracted once with PyMuPDF, for the stage micro-benchmarks.

Looks for ``shared/corpus/pdfs`` above the repository root (``DOCSAN_CORPUS``
overrides it), the same rule as the tests' conftest.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parent.parent


def corpus_pdfs() -> list[Path]:
    env = os.environ.get("DOCSAN_CORPUS")
    dirs = [Path(env) / "pdfs"] if env else [p / "shared" / "corpus" / "pdfs" for p in ROOT.parents]
    for d in dirs:
        if d.is_dir():
            return sorted(d.glob("*.pdf"))
    raise SystemExit("shared corpus not found (set DOCSAN_CORPUS)")


@cache
def paragraphs() -> tuple[str, ...]:
    """Every non-empty text block of every readable PDF, in corpus order."""
    out = []
    for path in corpus_pdfs():
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
