"""The lines ``docsan clean`` ends with on stderr: files, pages, tokens before and after, removals by stage, time.

Shown when stderr is a terminal, or with ``-v`` (which adds a line of extraction notes for each
file that has any); ``-q`` silences it. Standard output stays the cleaned text only.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from docsan.pipeline import CleanResult


@dataclass(slots=True)
class Summary:
    count: Callable[[str], int]
    verbose: bool = False
    files: int = 0
    failed: int = 0
    pages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    removals: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    def add(self, result: CleanResult) -> None:
        """Count one cleaned input: its text before and after, whatever format is written."""
        self.files += 1
        self.pages += len(result.original.pages)
        stages = result.report.stages
        # The pipeline counted the original already when it was given a counter (--html-report).
        first = stages[0].tokens_before if stages else None
        self.tokens_before += first if first is not None else self.count(result.original.text)
        last = stages[-1].tokens_after if stages else None
        self.tokens_after += last if last is not None else self.count(result.document.text)
        self.removals.update(c.stage for c in result.report.changes)
        if self.verbose:
            ocr = [str(p.number) for p in result.original.pages if p.ocr]
            notes = ([f"pages read by OCR: {', '.join(ocr)}"] if ocr else []) + list(result.report.notes)
            # A file with nothing to say gets no line: in a batch, one per file would bury the few that matter.
            if notes:
                self.notes.append(f"{result.document.name}: " + "; ".join(notes))

    def lines(self) -> list[str]:
        seconds = time.perf_counter() - self.started
        failed = f" ({self.failed} failed)" if self.failed else ""
        change = (self.tokens_after - self.tokens_before) / self.tokens_before if self.tokens_before else 0.0
        removed = ", ".join(f"{stage} {n}" for stage, n in self.removals.most_common()) or "nothing"
        return [
            *self.notes,
            f"docsan: {self.files + self.failed} file(s){failed}, {self.pages} page(s), "
            f"{self.tokens_before:,} → {self.tokens_after:,} tokens ({change:+.1%}), {seconds:.1f} s",
            f"docsan: removed or changed: {removed}",
        ]
