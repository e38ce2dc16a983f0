"""Shared fixtures: the committed fixtures and the team's shared corpus of real PDFs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="session")
def vllm_url() -> Iterator[str]:
    """A real vLLM OpenAI server (CPU build, bundled SmolLM2), started once per session, stopped at the end.

    About 60 s to start and 3 GB of memory here. ``DOCSAN_TEST_VLLM_URL`` points the tests at one already
    running (started the same way: ``python -m docsan.serve.embedded_upstream``) to iterate faster.
    """
    given = os.environ.get("DOCSAN_TEST_VLLM_URL")
    if given:
        yield given.rstrip("/")
        return
    from docsan.serve.embedded_upstream import EmbeddedServer
    from tests.serve_support import TEST_ENGINE

    server = EmbeddedServer(TEST_ENGINE).start()
    try:
        server.wait_ready(timeout_s=900)
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def recording_proxy(vllm_url: str) -> Iterator[tuple[str, Any]]:
    """(URL, proxy): a recording HTTP proxy in front of the session's vLLM server."""
    from tests.serve_support import RecordingProxy, run_uvicorn

    proxy = RecordingProxy(vllm_url)
    with run_uvicorn(proxy.app()) as url:
        yield url, proxy
