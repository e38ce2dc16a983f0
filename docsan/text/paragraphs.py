"""Paragraphs in plain text: a blank line ends one.

The one definition shared by the text and chat extractors, the budget's chat
trimming (which rebuilds messages into blocks) and the near-duplicate stage
(which compares a block's paragraphs one by one after reflow marked their ends
with a blank line).
"""

from __future__ import annotations

import regex

from docsan.model import Block, BlockKind, Source

# A paragraph ends at a blank line (spaces allowed on it). Linear: a single
# character class with a bounded alternation.
PARAGRAPH_BREAK = regex.compile(r"\n[ \t]*\n")
_MD_HEADING = regex.compile(r"#{1,6} ")


def split_paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text``: split at blank lines, blank pieces dropped, newlines at their ends trimmed."""
    return [para.strip("\n") for para in PARAGRAPH_BREAK.split(text) if para.strip()]


def paragraphs_to_blocks(text: str, source: Source, *, markdown: bool = False) -> list[Block]:
    """One block per paragraph; with ``markdown``, a paragraph starting ``#`` to ``######`` is a heading
    (its first line; the lines under it are a text block)."""
    blocks = []
    for para in split_paragraphs(text):
        if markdown and _MD_HEADING.match(para.lstrip()):
            # A Markdown heading is its own line: the lines under it (no blank line between) are text.
            head, _, rest = para.partition("\n")
            blocks.append(Block(head, kind=BlockKind.HEADING, source=source))
            if rest.strip():
                blocks.append(Block(rest, source=source))
            continue
        blocks.append(Block(para, source=source))
    return blocks
