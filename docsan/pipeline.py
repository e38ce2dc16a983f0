"""Runs stages in order and collects their reports."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from docsan.chat.guard import keep_messages
from docsan.config import Config
from docsan.model import Document
from docsan.report import Report, StageReport
from docsan.stages import Stage, build_stage


@dataclass(slots=True)
class CleanResult:
    """The outcome of cleaning one input.

    ``original`` is the document as extracted (never modified);
    ``document`` is the cleaned one; ``report`` holds every change.
    """

    original: Document
    document: Document
    report: Report

    @property
    def text(self) -> str:
        from docsan.render import render_text

        return render_text(self.document)


class Pipeline:
    """An ordered list of stages; build it from a :class:`Config` or from stage objects."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = list(stages)

    @classmethod
    def from_config(cls, config: Config) -> Pipeline:
        return cls([build_stage(name, config.stage_options(name)) for name in config.stages])

    def run(
        self,
        doc: Document,
        on_stage: Callable[[str], None] | None = None,
        count: Callable[[str], int] | None = None,
    ) -> CleanResult:
        """Run every stage over ``doc``; with ``count`` (a tokenizer's), each stage's tokens before and after too."""
        report = Report(source=doc.name, notes=list(doc.notes), extraction=list(doc.extraction), gaps=list(doc.gaps))
        current = doc
        # The document's text is joined once per stage, after it: a stage's text after is the next one's before.
        text = current.text
        tokens = count(text) if count is not None else None
        for stage in self.stages:
            if on_stage is not None:
                on_stage(stage.name)
            before = len(text)
            t0 = time.perf_counter()
            result = stage(current)
            if current.is_chat:
                result = keep_messages(stage, current, result)
            elapsed = time.perf_counter() - t0
            current = result.document
            text = current.text
            tokens_before, tokens = tokens, count(text) if count is not None else None
            report.stages.append(
                StageReport(
                    stage=stage.name,
                    chars_before=before,
                    chars_after=len(text),
                    seconds=elapsed,
                    stats=dict(result.stats),
                    changes=list(result.changes),
                    tokens_before=tokens_before,
                    tokens_after=tokens,
                )
            )
        return CleanResult(original=doc, document=current, report=report)
