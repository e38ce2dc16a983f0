"""The audit trail: the vocabulary of change codes, and every change of one input assembled into a report.

A user checks that nothing of value was lost by reading this report
(``docsan clean --report FILE`` writes it as JSON). docs/report.md lists
every code with its kind and meaning; each stage (and the extraction)
declares its codes next to the code that emits them, as :class:`ChangeCode`
constants, so a change cannot carry a code nobody documented.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

from docsan.model import Change, ChangeKind, Document

# Every code declared so far, by its name; tests check docs/report.md against it.
CODES: dict[str, ChangeCode] = {}

# stage.rule, or stage.group.rule: lower-case words joined by underscores.
_CODE = regex.compile(r"[a-z]+(?:_[a-z]+)*(?:\.[a-z]+(?:_[a-z]+)*){1,2}")


@dataclass(frozen=True, slots=True)
class ChangeCode:
    """One entry of the report vocabulary: ``stage.rule``, the kind of change it makes, and what it means."""

    code: str
    kind: ChangeKind
    meaning: str

    def __post_init__(self) -> None:
        if not _CODE.fullmatch(self.code):
            raise ValueError(f"change code {self.code!r} is not stage.rule (lower case, underscores)")
        if self.code in CODES and CODES[self.code] != self:
            raise ValueError(f"change code {self.code!r} is declared twice")
        CODES[self.code] = self

    @property
    def stage(self) -> str:
        """The stage that emits it (``extract`` for the extraction)."""
        return self.code.split(".", 1)[0]

    @property
    def stat(self) -> str:
        """The code without its stage as a statistics key (``furniture.running_header`` -> ``running_header``)."""
        return self.code.split(".", 1)[1].replace(".", "_")

    @property
    def rule(self) -> str:
        """The code's last part (``normalize.invisible.tag_character`` -> ``tag_character``)."""
        return self.code.rsplit(".", 1)[1]

    def change(
        self,
        reason: str,
        page: int,
        text: str,
        replacement: str | None = None,
        duplicate_of: str | None = None,
    ) -> Change:
        """A :class:`~docsan.model.Change` with this code, its kind and its stage."""
        return Change(self.stage, reason, page, text, replacement, duplicate_of, code=self.code, kind=self.kind)


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
    """The whole audit of one input: extraction notes and removals, then every stage's report."""

    source: str
    notes: list[str] = field(default_factory=list)
    stages: list[StageReport] = field(default_factory=list)
    # What the extraction left out (Document.extraction).
    extraction: list[Change] = field(default_factory=list)

    @property
    def changes(self) -> list[Change]:
        """Every change, extraction first, then stage by stage."""
        return [*self.extraction, *(c for s in self.stages for c in s.changes)]

    def with_code(self, code: str | ChangeCode) -> list[Change]:
        """The changes with this code, or under it (``"normalize.invisible"`` matches every invisible class)."""
        name = code.code if isinstance(code, ChangeCode) else code
        return [c for c in self.changes if c.code == name or c.code.startswith(name + ".")]

    def stage(self, name: str) -> StageReport:
        for s in self.stages:
            if s.stage == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "notes": list(self.notes),
            "extraction": [c.to_dict() for c in self.extraction],
            "stages": [s.to_dict() for s in self.stages],
        }


__all__ = ["CODES", "Change", "ChangeCode", "ChangeKind", "Report", "StageReport", "StageResult"]
