"""Shared fixtures: the committed fixtures and the team's shared corpus of real PDFs."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# The shared corpus sits beside the checkout (../shared/corpus), in CI too;
# a worktree one level deeper (wt/NAME) finds it beside its parent.
CORPUS = next(
    (p / "shared" / "corpus" / "pdfs" for p in ROOT.parents if (p / "shared" / "corpus" / "pdfs").is_dir()),
    ROOT.parent / "shared" / "corpus" / "pdfs",
)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
