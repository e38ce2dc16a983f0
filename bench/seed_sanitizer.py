"""The incident's own ``TextSanitizer``, reconstructed from the report in ../shared/seed/.

RECONSTRUCTION. The incident report shows only this::

    class TextSanitizer:
        def __init__(self):
            self.repeats_regex = re.compile(r"(.+?)\\1{3,}")  # 4+ repeats
        def clean(self, text):
            text = self.remove_hidden_chars(text)  # clean \\x00-\\x1F
            text = self.repeats_regex.sub(r"\\1", text)  # dedupe
            return truncate_by_paragraph(text, 8000)  # truncate by paragraph

``remove_hidden_chars`` and ``truncate_by_paragraph`` are not shown. The
minimal faithful versions below make two readings explicit:

- ``remove_hidden_chars`` removes the range \\x00-\\x1F named in the comment
  *except* newline and tab: removing newlines too would leave no paragraphs
  for the next step to truncate by, so the authors cannot have meant them.
- ``truncate_by_paragraph(text, 8000)`` keeps whole paragraphs (split on
  blank lines) from the start while the total stays within 8,000 tokens of the
  served model (the incident's contexts are measured in tokens). The count is
  injected so callers pick the tokenizer; the bench passes DeepSeek-V4's.

This module exists only to be measured. Its regex is the quadratic one the
project forbids elsewhere: it is run in a child process with a time-out
(see bench/quality.py), never inside docsan.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# The incident's regex, verbatim. Deliberately the stdlib `re`, as in the report.
REPEATS = re.compile(r"(.+?)\1{3,}")
HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f]")
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def remove_hidden_chars(text: str) -> str:
    return HIDDEN.sub("", text)


def truncate_by_paragraph(text: str, limit: int, count: Callable[[str], int]) -> str:
    """Whole paragraphs from the start while their joined token count stays within ``limit``."""
    kept: list[str] = []
    for para in PARAGRAPH_BREAK.split(text):
        candidate = "\n\n".join([*kept, para])
        if count(candidate) > limit:
            break
        kept.append(para)
    return "\n\n".join(kept)


class TextSanitizer:
    """The incident's sanitizer; ``limit`` and ``count`` default to 8,000 DeepSeek-V4 tokens."""

    def __init__(self, limit: int = 8000, count: Callable[[str], int] | None = None) -> None:
        self.repeats_regex = REPEATS
        self.limit = limit
        if count is None:
            from bench.common import count_tokens

            count = count_tokens
        self.count = count

    def remove_hidden_chars(self, text: str) -> str:
        return remove_hidden_chars(text)

    def clean(self, text: str) -> str:
        text = self.remove_hidden_chars(text)
        text = self.repeats_regex.sub(r"\1", text)
        return truncate_by_paragraph(text, self.limit, self.count)
