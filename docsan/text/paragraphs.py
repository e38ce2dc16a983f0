"""Paragraphs in plain text: a blank line ends one.

The one definition shared by the text and chat extractors, the budget's chat
trimming (which rebuilds messages into blocks) and the near-duplicate stage
(which compares a block's paragraphs one by one after reflow marked their ends
with a blank line).
"""

from __future__ import annotations

import regex

from docsan.model import Block, BlockKind, Document, Source
from docsan.text.chardata import display_width

# Display columns (a CJK character counting two): a block none of whose lines is this wide is
# a list of short lines (names, an address, a form's fields, table cells read as text), not
# wrapped prose. 12 CJK characters or about four English words.
SHORT_LINE = 24
# A paragraph ends at a blank line (spaces allowed on it). Linear: a single
# character class with a bounded alternation.
PARAGRAPH_BREAK = regex.compile(r"\n[ \t]*\n")
_MD_HEADING = regex.compile(r"#{1,6} ")


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Where the paragraphs of ``text`` are: split at blank lines, blank pieces dropped, end newlines trimmed."""
    if text.count("\n") < 2:  # no blank line possible: one piece (most blocks once reflow has joined their lines)
        return [(len(text) - len(text.lstrip("\n")), len(text.rstrip("\n")))] if text.strip() else []
    spans = []
    start = 0
    for end, after in [(m.start(), m.end()) for m in PARAGRAPH_BREAK.finditer(text)] + [(len(text), len(text))]:
        piece = text[start:end]
        if piece.strip():
            spans.append((start + len(piece) - len(piece.lstrip("\n")), end - len(piece) + len(piece.rstrip("\n"))))
        start = after
    return spans


class BlockParagraphs(dict[tuple[int, int], list[tuple[int, int]]]):
    """The :func:`paragraph_spans` of a document's blocks by (page index, block index), each found when first read.

    A stage that reads a block's paragraphs in several passes (sections,
    units, passages) finds them once per document instead of once per pass.
    A dict, so that reading a known block costs one lookup. ``by_text``: spans
    found before, by the block's text (filled here), for a stage that looks at
    nearly the same blocks again (neardup's later rounds). The lists are shared: read only.
    """

    def __init__(self, doc: Document, by_text: dict[str, list[tuple[int, int]]] | None = None) -> None:
        super().__init__()
        self._doc = doc
        self._by_text = {} if by_text is None else by_text

    def __missing__(self, key: tuple[int, int]) -> list[tuple[int, int]]:
        text = self._doc.pages[key[0]].blocks[key[1]].text
        spans = self._by_text.get(text)
        if spans is None:
            spans = self._by_text[text] = paragraph_spans(text)
        self[key] = spans
        return spans


def split_paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text`` (see :func:`paragraph_spans`)."""
    return [text[a:b] for a, b in paragraph_spans(text)]


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


def is_short_lines(text: str) -> bool:
    """True for several lines none of which is :data:`SHORT_LINE` columns wide: a list or a form, not prose.

    One short line is not: a heading, a list item, the last line of a paragraph.
    """
    if "\n" not in text:  # most blocks once reflow has joined their lines: no copy of the text to split
        return False
    lines = text.strip().split("\n")
    return len(lines) > 1 and all(display_width(line.strip()) < SHORT_LINE for line in lines)
