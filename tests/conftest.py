"""Shared fixtures: the committed fixtures and the team's shared corpus of real PDFs."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.common import corpus_pdfs

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# Found by the one rule bench/common.py keeps (beside the checkout, or DOCSAN_SHARED);
# the fallback only names where a skipped test looked.
CORPUS = corpus_pdfs() or ROOT.parent / "shared" / "corpus" / "pdfs"


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
