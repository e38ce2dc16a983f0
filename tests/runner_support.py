"""Shared by the runner tests: the default cleaning pipeline without OCR, a queue in a temporary folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import corpus_pdfs
from docsan.config import DEFAULT_STAGES, Config, config_from_dict
from docsan.runner.backends.base import Generation, GenerationRequest, OnText
from docsan.runner.tiers import Tier

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_PDF = ROOT / "fixtures" / "bilingual_report.pdf"
# 15 dense pages, ~19k prompt tokens before cleaning: a real "long document" for routing.
LONG_PDF = (corpus_pdfs() or ROOT.parent / "shared" / "corpus" / "pdfs") / "fedreg_2020-17221_15p.pdf"


def runner_config(tmp_path: Path, runner: dict[str, Any] | None = None) -> Config:
    """The default stages, no OCR (the test files have text layers), the queue in ``tmp_path``."""
    return config_from_dict(
        {
            "stages": list(DEFAULT_STAGES),
            "extract": {"ocr": "never"},
            "runner": {"queue_path": str(tmp_path / "queue.sqlite3"), **(runner or {})},
        }
    )


class RecordingBackend:
    """Test double for asserting what reaches an engine: records each call, generates nothing."""

    def __init__(self, name: str = "remote") -> None:
        self.name = name
        self.calls: list[tuple[str, GenerationRequest]] = []

    def generate(self, tier: Tier, request: GenerationRequest, on_text: OnText | None = None) -> Generation:
        self.calls.append((tier.name, request))
        return Generation("", len(request.prompt_ids), 0, "stop", 0.0, None)

    def close(self) -> None:
        pass
