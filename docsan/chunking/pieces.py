"""The chunker's input: the cleaned document's blocks in reading order, each within the limit, with its section.

A heading, or a run of headings, opens a section and updates the heading
path; so does each chat message. A block over the limit is cut
(:mod:`docsan.chunking.split`); the first cut of a long paragraph under a
heading leaves room for the heading, so a heading is not left alone in a chunk.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from docsan.budget.tokenizer import Tokenizer
from docsan.chunking.split import split_table, split_text
from docsan.model import BlockKind, Document, Source
from docsan.render import render_block

JOINER = "\n\n"
# Between two cuts of one paragraph in the same chunk: they were one paragraph, so no paragraph break.
CONTINUATION = " "


@dataclass(frozen=True, slots=True)
class Piece:
    """A block, or a cut of one, at most ``limit`` tokens; ``position`` is (page, block, cut) indices."""

    text: str
    position: tuple[int, int, int]
    page_number: int
    kind: BlockKind
    source: Source
    section: int
    headings: tuple[str, ...]
    tokens: int
    # What goes before it when it follows another piece in a chunk.
    joiner: str = JOINER


def pieces(doc: Document, limit: int, cut_limit: int, tok: Tokenizer) -> Iterator[Piece]:
    """Every rendered block in reading order (cut to ``cut_limit`` when over ``limit``), its section and headings.

    A run of headings opens one section (a title and its first subheading go
    with the text under them), and the first cut of a long paragraph under
    them leaves room for them, so a heading does not end up alone in a chunk.
    """
    levels = heading_levels(doc)
    path: list[tuple[int, str]] = []
    section = 0
    heads = 0  # tokens of the run of headings just before, with their joins
    join = tok.count(JOINER)
    for pi, page in enumerate(doc.pages):
        if doc.is_chat:
            section += 1
            heads = 0
        for bi, block in enumerate(page.blocks):
            text = render_block(block).strip()
            if not text:
                continue
            if block.kind is BlockKind.HEADING:
                if not heads:
                    section += 1
                level = levels.get((pi, bi), 1)
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, _heading_text(block.text)))
            n = tok.count(text)
            # Each cut with whether it continues the text of the cut before (a paragraph's next sentences)
            # or starts a part of its own (a table's next rows, under the header again).
            cuts: list[tuple[str, bool]]
            if n <= limit:
                cuts = [(text, False)]
            elif block.kind is BlockKind.TABLE and block.table is not None:
                cuts = split_table(block.table, cut_limit, tok)
            else:
                room = cut_limit - heads - join
                first = room if room >= cut_limit // 2 else None
                cuts = [(c, i > 0) for i, c in enumerate(split_text(text, cut_limit, tok, first_limit=first))]
            counts = [n] if n <= limit else tok.count_batch([c for c, _ in cuts])
            headings = tuple(h for _, h in path)
            for ci, ((cut, continues), k) in enumerate(zip(cuts, counts, strict=True)):
                glue = CONTINUATION if continues else JOINER
                yield Piece(cut, (pi, bi, ci), page.number, block.kind, block.source, section, headings, k, glue)
            heads = heads + counts[-1] + join if block.kind is BlockKind.HEADING else 0


def _heading_text(text: str) -> str:
    return " ".join(text.lstrip("#").split())


def heading_levels(doc: Document) -> dict[tuple[int, int], int]:
    """Level of each heading block, keyed by (page, block) index: Markdown's ``#`` count, else its font size's rank.

    PDF headings carry no level; a larger font is taken as a higher level,
    the usual convention of report and paper templates.
    """
    headings = {
        (pi, bi): b
        for pi, page in enumerate(doc.pages)
        for bi, b in enumerate(page.blocks)
        if b.kind is BlockKind.HEADING
    }
    sizes = sorted({b.font_size for b in headings.values() if b.font_size is not None}, reverse=True)
    rank = {s: i + 1 for i, s in enumerate(sizes)}
    levels: dict[tuple[int, int], int] = {}
    for key, b in headings.items():
        hashes = len(b.text) - len(b.text.lstrip("#"))
        levels[key] = hashes if 0 < hashes <= 6 else rank.get(b.font_size, 1) if b.font_size is not None else 1
    return levels
