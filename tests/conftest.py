"""Shared fixtures: the committed fixtures and the team's shared corpus of real PDFs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# The shared corpus sits beside the checkout (../shared/corpus), in CI too;
# DOCSAN_CORPUS points elsewhere (a git worktree that is not beside shared/).
CORPUS = Path(os.environ.get("DOCSAN_CORPUS", ROOT.parent / "shared" / "corpus" / "pdfs"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
