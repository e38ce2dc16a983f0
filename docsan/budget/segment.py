"""What the budget keeps or drops: units of whole blocks, and sentence ends to cut at.

A *unit* is the smallest thing the budget keeps or drops: one rendered block,
except that headings are glued to the block that follows them, so a heading
is never kept without at least the start of its section. Tables are never cut.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from docsan.model import BlockKind, Document
from docsan.render import render_block


@dataclass(frozen=True, slots=True)
class Piece:
    """One rendered block: where it sits in the document and its text as rendered."""

    page: int  # index into doc.pages
    block: int  # index into page.blocks
    page_number: int  # the page's 1-based number, for the report
    text: str
    kind: BlockKind


@dataclass(frozen=True, slots=True)
class Unit:
    """Headings (zero or more) followed by one body block; kept whole, dropped whole, or its body cut."""

    index: int
    pieces: tuple[Piece, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.pieces)

    @property
    def body(self) -> Piece:
        return self.pieces[-1]

    @property
    def cuttable(self) -> bool:
        """A table is kept whole or dropped whole; a lone heading is not cut either."""
        return self.body.kind not in (BlockKind.TABLE, BlockKind.HEADING)


def rendered_pieces(doc: Document, *, markdown: bool = False, table_html: bool = False) -> list[Piece]:
    """Every block exactly as :func:`docsan.render.render_text` emits it (blank ones skipped)."""
    out = []
    for pi, page in enumerate(doc.pages):
        for bi, block in enumerate(page.blocks):
            text = render_block(block, markdown=markdown, table_html=table_html)
            if text.strip():
                out.append(Piece(pi, bi, page.number, text, block.kind))
    return out


def units(pieces: list[Piece]) -> list[Unit]:
    """Group each run of headings with the block after it; a trailing heading stands alone."""
    out: list[Unit] = []
    pending: list[Piece] = []
    for piece in pieces:
        pending.append(piece)
        if piece.kind is not BlockKind.HEADING:
            out.append(Unit(len(out), tuple(pending)))
            pending = []
    if pending:
        out.append(Unit(len(out), tuple(pending)))
    return out


# A sentence ends at Chinese 。！？；(no space needed) or at .?! followed by
# whitespace or the end ("3.14" and "e.g.x" do not end sentences), with any
# closing quotes/brackets and the following spaces kept in the sentence.
# Linear: character classes with single quantifiers, no nesting.
_SENTENCE_END = regex.compile(r"[。！？；]+[”’」』）》\"')\]]*[ \t\r\n]*|[.?!]+[\"'”’)\]]*(?:[ \t\r\n]+|$)")


def sentence_ends(text: str) -> list[int]:
    """Offsets just after each sentence end (trailing spaces included), ascending, excluding len(text)."""
    return [m.end() for m in _SENTENCE_END.finditer(text) if 0 < m.end() < len(text)]
