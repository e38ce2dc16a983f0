"""The contract every stage meets.

A stage is a plain callable from :class:`Document` to :class:`StageResult`.
It must not modify its input, and it must record every removal or rewrite
as a :class:`~docsan.report.Change`, so nothing disappears silently.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from docsan.model import Document
from docsan.report import StageResult


@runtime_checkable
class Stage(Protocol):
    """A named document transformation."""

    name: str

    def __call__(self, doc: Document) -> StageResult: ...
