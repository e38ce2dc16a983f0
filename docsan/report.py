"""The audit trail: every character a stage removes or rewrites is recorded here.

A user checks that nothing of value was lost by reading this report
(``docsan clean --report FILE`` writes it as JSON).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from docsan.model import Document


@dataclass(frozen=True, slots=True)
class Change:
    """One removal or rewrite made by a stage.

    ``replacement`` is ``None`` for a removal; for a rewrite (mojibake fixed,
    table cell merged) it holds the new text. ``duplicate_of`` names what a
    removed repeat duplicated, so a reader can check it was really a repeat.
    """

    stage: str
    reason: str
    page: int
    text: str
    replacement: str | None = None
    duplicate_of: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(slots=True)
class StageResult:
    """What a stage returns: the new document, its changes and its counters."""

    document: Document
    changes: list[Change] = field(default_factory=list)
    # Stage-specific counters ("blocks_dropped", "chars_removed"...): the
    # datatrove habit of building statistics into every step.
    stats: dict[str, int | float] = field(default_factory=dict)


@dataclass(slots=True)
class StageReport:
    """One stage's line in the report: counters, timing and its changes."""

    stage: str
    chars_before: int
    chars_after: int
    seconds: float
    stats: dict[str, int | float]
    changes: list[Change]
    # Exact token counts of the text before and after, when the pipeline was given a counter
    # (``--html-report`` draws them); None otherwise, and then left out of the JSON.
    tokens_before: int | None = None
    tokens_after: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stage": self.stage,
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
            "seconds": round(self.seconds, 6),
            "stats": self.stats,
            "changes": [c.to_dict() for c in self.changes],
        }
        if self.tokens_before is not None:
            out["tokens_before"], out["tokens_after"] = self.tokens_before, self.tokens_after
        return out


@dataclass(slots=True)
class Report:
    """The whole audit of one input: extraction notes plus every stage's report."""

    source: str
    notes: list[str] = field(default_factory=list)
    stages: list[StageReport] = field(default_factory=list)

    @property
    def changes(self) -> list[Change]:
        return [c for s in self.stages for c in s.changes]

    def stage(self, name: str) -> StageReport:
        for s in self.stages:
            if s.stage == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "notes": list(self.notes),
            "stages": [s.to_dict() for s in self.stages],
        }
