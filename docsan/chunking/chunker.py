"""Chunks for retrieval: whole paragraphs packed up to a token limit, counted exactly with the served tokenizer.

The guarantee: ``tokenizer.count(chunk.text) == chunk.num_tokens <= chunk_tokens``
for every chunk, the count taken on the chunk's final text (never summed
over its pieces: BPE merges across a join change the total).

How:

1. The cleaned document's blocks, rendered as ``docsan clean`` writes them
   (tables as Markdown pipe tables), are walked in reading order
   (:mod:`docsan.chunking.pieces`). A heading, or a run of headings, starts
   a new section and updates the heading path; so does each chat message. A
   chunk never spans two sections, so its ``headings`` hold for all of it.
2. A block over the limit is cut (:mod:`docsan.chunking.split`): a paragraph
   at sentence ends, a table between rows with its header rows repeated.
3. Pieces are packed greedily, joined by a blank line, while the sum of
   their counts (each piece counted once) stays within the limit; the
   joined text is then counted exactly, and while a merge across a join
   puts it over, its last piece moves on to the next chunk.
4. With ``overlap``, a chunk that continues a section starts with the last
   whole sentences (at most ``overlap`` tokens) of the chunk before it, when
   they fit; the limit always wins over the overlap.

Each chunk's ``id`` is a hash of the document's name and the position
(page, block, piece) of its first piece: stable across runs of the same
input and configuration, different for every chunk of a document.
"""

from __future__ import annotations

import hashlib
import warnings
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter

from docsan.budget.segment import sentence_ends
from docsan.budget.tokenizer import Tokenizer
from docsan.chunking.pieces import JOINER, Piece, pieces
from docsan.errors import ConfigError
from docsan.model import BlockKind, Document, Source
from docsan.pipeline import CleanResult

DEFAULT_CHUNK_TOKENS = 512
# The older name, kept for existing imports (see chunk_size).
DEFAULT_MAX_TOKENS = DEFAULT_CHUNK_TOKENS
# Below this a byte-level tokenizer may not fit one character (up to 4 byte
# tokens) plus the join, and no limit could be kept.
MIN_CHUNK_TOKENS = 8
# What chunk_size gives when no size was: the caller's default, or None for "no chunking".
_Default = TypeVar("_Default", int, None)


def chunk_size(
    chunk_tokens: int | None, max_tokens: int | None, where: str, default: _Default = None
) -> int | _Default:
    """The chunk size given as ``chunk_tokens`` or by its older name ``max_tokens`` (a DeprecationWarning).

    Elsewhere in docsan (the runner, the gateway, ``docsan ask``) ``max_tokens`` is
    the answer's length, OpenAI's name, so a chunk's limit is ``chunk_tokens``; the
    old keyword keeps working. ``default`` when neither is given.
    """
    if max_tokens is None:
        return default if chunk_tokens is None else chunk_tokens
    if chunk_tokens is not None:
        raise ConfigError(f"{where}: max_tokens is the old name of chunk_tokens: give one of them")
    message = f"{where}: max_tokens is deprecated, use chunk_tokens (the same number)"
    warnings.warn(message, DeprecationWarning, stacklevel=3)
    return max_tokens


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieval unit: sanitized text within the token limit, and where it came from."""

    # Hash of source and the position of the chunk's first piece (16 hex digits).
    id: str
    # 0-based position of the chunk in its document.
    index: int
    text: str
    # Exact count of ``text`` with the tokenizer named below (no BOS/EOS).
    num_tokens: int
    # 1-based page numbers the text comes from (message numbers for a chat).
    page_numbers: tuple[int, ...]
    # The heading path above the text (of its last part), outermost first.
    headings: tuple[str, ...]
    # The document it came from (its path; "-" for standard input).
    source: str
    # What the text is made of: block kinds (text, heading, table) and where
    # each block's text came from (text_layer, ocr, ...), in first-seen order.
    kinds: tuple[BlockKind, ...]
    block_sources: tuple[Source, ...]
    # True when the chunk starts with the end of the chunk before it (overlap).
    overlapped: bool = False
    tokenizer: str = ""

    def to_dict(self) -> dict[str, Any]:
        """One JSONL line of ``docsan chunk`` (``docsan schema chunk`` describes it)."""
        return _chunk_adapter().dump_python(self, mode="json")


@cache
def _chunk_adapter() -> TypeAdapter[Chunk]:
    return TypeAdapter(Chunk)


@dataclass(slots=True)
class _Open:
    """The chunk being filled; ``estimate`` is the sum of its parts' counts and the joins."""

    pieces: list[Piece] = field(default_factory=list)
    overlap: str = ""
    overlap_page: int | None = None
    estimate: int = 0

    @property
    def text(self) -> str:
        out = self.overlap
        for p in self.pieces:
            # Each piece after another: a paragraph break, or a space for the next cut of one paragraph.
            out = out + p.joiner + p.text if out else p.text
        return out


def chunk(
    result: CleanResult | Document,
    chunk_tokens: int | None = None,
    *,
    overlap: int = 0,
    tokenizer: Tokenizer | str | Path | None = None,
    max_tokens: int | None = None,
) -> list[Chunk]:
    """Cut a cleaned document into chunks of at most ``chunk_tokens`` tokens (exact count; default 512).

    ``result`` is what :func:`docsan.clean_file` returns, or a cleaned
    :class:`Document`. ``tokenizer`` is the served model's (a
    :class:`~docsan.budget.Tokenizer`, a local folder or ``tokenizer.json``;
    default DeepSeek-V4). The text is taken as cleaned: to escape the model's
    control tokens, clean with the ``special_tokens`` stage (``docsan chunk`` does).
    ``max_tokens`` is ``chunk_tokens``' older name (deprecated).
    """
    size = chunk_size(chunk_tokens, max_tokens, "chunk")
    return list(iter_chunks(result, size, overlap=overlap, tokenizer=tokenizer))


def iter_chunks(
    result: CleanResult | Document,
    chunk_tokens: int | None = None,
    *,
    overlap: int = 0,
    tokenizer: Tokenizer | str | Path | None = None,
    max_tokens: int | None = None,
) -> Iterator[Chunk]:
    """:func:`chunk`, one chunk at a time."""
    limit = chunk_size(chunk_tokens, max_tokens, "iter_chunks", DEFAULT_CHUNK_TOKENS)
    if limit < MIN_CHUNK_TOKENS:
        raise ConfigError(f"chunk: chunk_tokens must be at least {MIN_CHUNK_TOKENS}, got {limit}")
    if not 0 <= overlap < limit:
        raise ConfigError(f"chunk: overlap must be at least 0 and below chunk_tokens ({limit}), got {overlap}")
    doc = result.document if isinstance(result, CleanResult) else result
    tok = tokenizer if isinstance(tokenizer, Tokenizer) else Tokenizer.load(tokenizer)
    # The cuts of a long paragraph leave room for the overlap before them
    # (a maximal cut could never follow one), but keep at least half the limit.
    cut_limit = max(limit - overlap - tok.count(JOINER), (limit + 1) // 2) if overlap else limit
    yield from _Packer(doc.name, limit, overlap, tok).pack(pieces(doc, limit, cut_limit, tok))


class _Packer:
    """Greedy packing of pieces into chunks, one section per chunk, each verified by an exact count."""

    def __init__(self, source: str, limit: int, overlap: int, tok: Tokenizer) -> None:
        self.source, self.limit, self.overlap, self.tok = source, limit, overlap, tok
        self.join_cost = tok.count(JOINER)
        self.index = 0

    def pack(self, pieces: Iterator[Piece]) -> Iterator[Chunk]:
        # Pieces a chunk gave back (over the limit after all) come before the rest.
        back: deque[Piece] = deque()
        current = _Open()
        while True:
            piece = back.popleft() if back else next(pieces, None)
            if piece is None:
                if not current.pieces:
                    return
                done, given_back = self._close(current)
                yield done
                if not given_back:
                    return
                back.extend(given_back)
                current = self._continued(done, current.pieces[-1], back.popleft())
                continue
            if not current.pieces:
                current = _Open([piece], estimate=piece.tokens)
                continue
            same = current.pieces[0].section == piece.section
            if same and current.estimate + self.join_cost + piece.tokens <= self.limit:
                current.pieces.append(piece)
                current.estimate += self.join_cost + piece.tokens
                continue
            done, given_back = self._close(current)
            yield done
            back.extendleft(reversed([*given_back, piece]))
            first = back.popleft()
            if same or given_back:
                current = self._continued(done, current.pieces[-1], first)
            else:
                current = _Open([first], estimate=first.tokens)

    def _continued(self, previous: Chunk, last: Piece, piece: Piece) -> _Open:
        """A chunk continuing the section: ``piece``, after the overlap when there is one and it fits.

        ``last`` is the previous chunk's last piece; the end of a table is no
        overlap (a header-less run of rows would read as a new table).
        """
        if self.overlap and last.kind is not BlockKind.TABLE:
            tail = _tail(previous.text, self.overlap, self.tok)
            estimate = self.tok.count(tail) + self.join_cost + piece.tokens
            if tail and estimate <= self.limit:
                return _Open([piece], tail, last.page_number, estimate)
        return _Open([piece], estimate=piece.tokens)

    def _close(self, current: _Open) -> tuple[Chunk, list[Piece]]:
        """The chunk, and the pieces taken off its end while the exact count was over the limit."""
        text = current.text
        n = self.tok.count(text)
        given_back: list[Piece] = []
        while n > self.limit and (len(current.pieces) > 1 or current.overlap):
            if len(current.pieces) > 1:
                given_back.insert(0, current.pieces.pop())
            else:
                current.overlap, current.overlap_page = "", None
            text = current.text
            n = self.tok.count(text)
        first = current.pieces[0]
        pages = [p.page_number for p in current.pieces]
        if current.overlap_page is not None:
            pages.append(current.overlap_page)
        digest = hashlib.blake2b(f"{self.source}\0{first.position}".encode(), digest_size=8).hexdigest()
        out = Chunk(
            id=digest,
            index=self.index,
            text=text,
            num_tokens=n,
            page_numbers=tuple(sorted(set(pages))),
            headings=current.pieces[-1].headings,
            source=self.source,
            kinds=tuple(dict.fromkeys(p.kind for p in current.pieces)),
            block_sources=tuple(dict.fromkeys(p.source for p in current.pieces)),
            overlapped=bool(current.overlap),
            tokenizer=self.tok.name,
        )
        self.index += 1
        return out, given_back


def _tail(text: str, budget: int, tok: Tokenizer) -> str:
    """The last whole sentences of ``text`` within ``budget`` tokens; empty when even the last one is longer."""
    starts = [0, *sentence_ends(text)]
    lo, hi, best = 0, len(starts) - 1, ""
    # The shortest tails are the latest starts: search for the earliest start that fits.
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = text[starts[mid] :].strip()
        if tok.count(candidate) <= budget:
            best, hi = candidate, mid - 1
        else:
            lo = mid + 1
    return best if best != text.strip() else ""
