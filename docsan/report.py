"""The audit trail: every character a stage removes or rewrites is recorded here.

A user checks that nothing of value was lost by reading this report
(``docsan clean --report FILE`` writes it as JSON).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from docsan.model import Document, Gap


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
            "seconds": round(self.seconds, 6),
            "stats": self.stats,
            "changes": [c.to_dict() for c in self.changes],
        }


@dataclass(slots=True)
class Report:
    """The whole audit of one input: extraction notes plus every stage's report."""

    source: str
    notes: list[str] = field(default_factory=list)
    stages: list[StageReport] = field(default_factory=list)
    # Text docsan could not get (OCR gave up, a page without text layer and OCR off, a limit):
    # the result is partial when this is not empty.
    gaps: list[Gap] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.gaps)

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
            "partial": self.partial,
            "gaps": [{"page": g.page, "reason": g.reason} for g in self.gaps],
            "stages": [s.to_dict() for s in self.stages],
        }
