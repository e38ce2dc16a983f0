"""Cut one block that is over the chunk limit into pieces that are each within it, counted exactly.

A paragraph is cut at sentence ends; a sentence longer than the limit, only
then, at the last word end (or, for text without spaces, the last character)
that fits. A table is cut between rows, and every piece starts with the
table's header rows, so each piece reads as a table on its own.
"""

from __future__ import annotations

from docsan.budget.segment import sentence_ends
from docsan.budget.tokenizer import Tokenizer
from docsan.model import Cell, Table
from docsan.render import table_to_markdown

# Where no sentence end fits, a cut backs off this many characters at most
# to the end of a word, so English is not cut mid-word.
WORD_BACKOFF = 40
# A piece of ``limit`` tokens is searched for within ``limit`` times this
# many characters, so a cut in a long paragraph never encodes the whole rest
# of it. Real tokens are far shorter; a longer run (spaces) is cut sooner, never over.
WINDOW_CHARS_PER_TOKEN = 64


def split_text(text: str, limit: int, tok: Tokenizer, *, first_limit: int | None = None) -> list[str]:
    """``text`` as consecutive stripped pieces of at most ``limit`` tokens each, cut at sentence ends.

    ``first_limit`` (smaller) holds for the first piece only: room left beside the headings above it.
    """
    ends = [*sentence_ends(text), len(text)]
    out: list[str] = []
    start = _skip_space(text, 0)
    while start < len(text):
        room = first_limit if first_limit is not None and not out else limit
        piece_end = _last_fitting_end(text, start, ends, room, tok)
        if piece_end is None:
            piece_end = _hard_cut(text, start, room, tok)
        piece = text[start:piece_end].strip()
        if piece:
            out.append(piece)
        start = _skip_space(text, piece_end)
    return out


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _last_fitting_end(text: str, start: int, ends: list[int], limit: int, tok: Tokenizer) -> int | None:
    """The furthest sentence end after ``start`` whose piece fits, by binary search (counts grow with length)."""
    lo = _first_after(ends, start)
    hi = _first_after(ends, start + limit * WINDOW_CHARS_PER_TOKEN)
    best = None
    while lo < hi:
        mid = (lo + hi) // 2
        if tok.count(text[start : ends[mid]].strip()) <= limit:
            best = ends[mid]
            lo = mid + 1
        else:
            hi = mid
    return best


def _first_after(ends: list[int], start: int) -> int:
    lo, hi = 0, len(ends)
    while lo < hi:
        mid = (lo + hi) // 2
        if ends[mid] <= start:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _hard_cut(text: str, start: int, limit: int, tok: Tokenizer) -> int:
    """The furthest character position whose piece fits, backed off to a word end when one is near.

    Searched over characters, not token offsets: with a byte-level BPE one
    character can be several tokens, and a cut must still land between characters.
    Always advances by at least one character.
    """
    lo, hi = start + 1, min(len(text), start + limit * WINDOW_CHARS_PER_TOKEN)
    best = start + 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if tok.count(text[start:mid].strip()) <= limit:
            best = mid
            lo = mid + 1
        else:
            hi = mid - 1
    window = max(start, best - WORD_BACKOFF)
    space = max(text.rfind(" ", window, best), text.rfind("\n", window, best))
    if space > start and text[start:space].strip() and best < len(text):
        return space
    return best


def split_table(table: Table, limit: int, tok: Tokenizer) -> list[tuple[str, bool]]:
    """Markdown pieces of ``table`` of at most ``limit`` tokens, cut between rows, header rows in each.

    A body row that does not fit even beside the header goes alone, as its
    table line without the header; a row too long for that (or a header
    alone over the limit) is the one case cut inside, as text. Each piece
    comes with whether it continues the text of the piece before (the next
    cut of such a row) rather than starting a table part of its own.
    """
    head = table.rows[: table.header_rows]
    body = table.rows[table.header_rows :]
    out: list[tuple[str, bool]] = []
    rows: list[tuple[Cell, ...]] = []

    def render(candidate: list[tuple[Cell, ...]]) -> str:
        return table_to_markdown(Table((*head, *candidate), header_rows=len(head)))

    def emit(text: str) -> None:
        cuts = [text] if tok.count(text) <= limit else split_text(text, limit, tok)
        out.extend((cut, i > 0) for i, cut in enumerate(cuts))

    for row in body:
        if tok.count(render([*rows, row])) <= limit:
            rows.append(row)
            continue
        if rows:
            out.append((render(rows), False))
            rows = []
        if tok.count(render([row])) <= limit:
            rows = [row]
        else:
            emit(table_to_markdown(Table((row,), header_rows=0)).splitlines()[-1])
    if rows or not body:
        emit(render(rows))
    return out
