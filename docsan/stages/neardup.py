"""Remove near-duplicate paragraphs (and, in chat histories, near-duplicate messages).

The incident's request bodies were up to 60% repeated text: the same pasted
document in several turns, the same project description three times in a
resume with a word changed. Exact hashing misses those; this stage finds them
with MinHash-LSH and removes every later copy, keeping the first.

* Units: paragraphs. A block holding several paragraphs (separated by a
  blank line: how reflow marks a paragraph end, and how a PDF extractor that
  joins closely set paragraphs into one block leaves them after reflow) gives
  one unit per paragraph, and a removed paragraph is cut out of its block.
  In a PDF whose extractor cut a paragraph into one block per line, the
  line blocks that reflow rejoins (the same rule,
  :func:`docsan.geometry.continues_paragraph`) form one unit
  (``group_lines``); after the reflow stage this is a no-op. In a chat history, whole messages are
  compared first (``messages``): a message goes whole only when none of its
  paragraphs is new (a re-sent paste with a new question keeps the question);
  then paragraphs are compared, which removes the paste alone.
* Shingles: CJK character 5-grams, word 3-grams elsewhere, per script segment
  (:mod:`docsan.text.shingles`). Signatures are computed in one batch, the
  values datasketch's ``MinHash.bulk`` gives with an xxh32 hash function and
  a fixed seed (:mod:`docsan.text.minhash`, which says why not datasketch itself).
* Candidates from LSH are verified by the exact Jaccard similarity of the
  shingle sets before anything is removed; a unit is only compared with units
  that were kept, so every removed unit has a surviving near-copy, named in
  its report entry.
* Units too short to have a single n-gram are compared by their normalised
  text (exact match), never by MinHash: their degenerate signatures would
  otherwise all collide.
* A paragraph that recurs once per section (a clause closing every section
  of a contract) is boilerplate and stays in every section
  (:func:`docsan.text.sections.is_boilerplate`).
* Then exact copies of passages are cut wherever they fall (``spans``): the
  running text of what is left, without paragraph and page breaks, is
  searched for later copies of earlier text (:mod:`docsan.text.passages`), so
  a copy whose paragraphs broke elsewhere than its source's is found too.

The cross-document stage (:mod:`docsan.corpus.dedupe`) uses this stage's
units, signatures, verification and removal through its public methods
(:meth:`NearDuplicates.units`, :meth:`~NearDuplicates.signatures`,
:meth:`~NearDuplicates.verify`, :meth:`~NearDuplicates.mark`,
:meth:`~NearDuplicates.remove`), so the two share thresholds, exemptions and
the decision itself.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import ClassVar

import numpy as np
import regex
from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from docsan.geometry import continues_paragraph, right_edges
from docsan.model import Block, BlockKind, ChangeKind, Document, Page
from docsan.report import Change, ChangeCode, StageResult
from docsan.text import minhash
from docsan.text.banding import BandIndex
from docsan.text.batchcache import MIB, BatchCache, text_bytes
from docsan.text.paragraphs import BlockParagraphs, is_short_lines, paragraph_spans, split_paragraphs
from docsan.text.passages import Entry, Passage, cut_spans, find_passages
from docsan.text.sections import NO_SECTIONS, Occurrence, Sections, find_sections, is_boilerplate, occurrence
from docsan.text.shingles import Shingled, novel_length, shingle

# Report entries quote what a removed unit duplicated; a page of text there
# would bury the report.
_QUOTE_CHARS = 200
_NUMBER = regex.compile(r"\p{Nd}+")

# By scale: a paragraph, or (chat histories) a whole message.
DUPLICATE = {
    scale: ChangeCode(f"neardup.{scale}", ChangeKind.REMOVED, f"a {scale} that repeats a kept one (exact or near copy)")
    for scale in ("paragraph", "message")
}
PASSAGE = ChangeCode(
    "neardup.passage",
    ChangeKind.REMOVED,
    "a later exact copy of an earlier passage, cut out of the blocks it runs over, whatever their boundaries",
)
# Rounds of the passes at most (see NearDuplicates.__call__): a bound, so that no input
# makes the stage run on; three were too few for a paragraph made of several copies that
# one round cuts piece by piece (tests/test_passages.py found one that needs four).
_MAX_ROUNDS = 8
# A paragraph of a block: (page index, block index, paragraph index or None for the whole block).
_Para = tuple[int, int, int | None]


@dataclass(slots=True)
class Unit:
    page: int  # index into doc.pages
    blocks: list[int]  # indices into the page's blocks
    text: str
    sh: Shingled
    label: str  # "page 3" / "message 2", for reports
    # The paragraph's index among its block's paragraphs when the block holds
    # several (see split_paragraphs); None when the unit is whole blocks.
    paragraph: int | None = None
    # A message's paragraphs: a message only counts as a copy when none of
    # them is new (a re-sent paste with a new question is not a duplicate).
    parts: tuple[Shingled, ...] = ()
    # The texts a message's shingles are the union of (its paragraphs'), when more than one; () when the
    # shingles are its own text's. What its signature is keyed by (see _SIGNATURES).
    sources: tuple[str, ...] = ()


# What one shingle of a kept set costs, a little over what was measured (tracemalloc, 4,000 paragraphs of the
# replay traffic: 135 bytes): its string object (71 on average; 84-90 for a CJK 5-gram) and its share of the
# set's table (64).
_SHINGLE_BYTES = 150


def _shingled_bytes(key: tuple[str, int, int], sh: Shingled) -> int:
    """An estimate of a kept entry of _SHINGLES: its shingles, its text and its normalised text.

    Lengths, not ``sys.getsizeof``: this runs for every new text, and the bound needs an estimate only.
    """
    return _SHINGLE_BYTES * len(sh.shingles) + text_bytes(key[0]) + text_bytes(sh.normalized)


# Shingles per text, kept across calls: a chat client re-sends its whole
# history with every turn, so almost every paragraph was shingled for the
# request before. 8,192 entries held 33-34 MiB on the replay traffic
# (docs/benchmarks.md, "The gateway's memory and the collector settings");
# the byte bound keeps longer paragraphs from taking more.
_SHINGLES: BatchCache[tuple[str, int, int], Shingled] = BatchCache(8192, 32 * MIB, _shingled_bytes)


def _shingle_text(key: tuple[str, int, int]) -> Shingled:
    text, cjk_n, word_n = key
    return shingle(text, cjk_n=cjk_n, word_n=word_n)


# A signature key: what a unit's shingle set is made from (its text, or a message's paragraphs' texts, see
# Unit.sources), the n-gram sizes, num_perm and seed. Not the set itself, which the key would keep alive
# (92-95 MiB of 16,384 entries on the replay traffic, docs/benchmarks.md as above). Correct because the set
# is a function of the texts and the n-gram sizes (shingle is deterministic; a message's set is the union of
# its paragraphs' sets, and a str key never equals a tuple key), and the signature a function of the set,
# num_perm and seed: equal keys, equal signatures. Two texts can make one set ("A b c" and "a, b c"): they get
# two entries of the same signature, never a wrong one.
_SignatureKey = tuple[str | tuple[str, ...], int, int, int, int]


def _signature_bytes(key: _SignatureKey, row: bytes) -> int:
    """An estimate of a kept entry of _SIGNATURES: its row and its key's texts."""
    source = key[0]
    return len(row) + (text_bytes(source) if isinstance(source, str) else sum(map(text_bytes, source)))


# The rows as bytes: each its own buffer (a numpy row is a view that keeps its whole batch's matrix alive, more
# than its entry's weight), and one join makes a call's matrix.
_SIGNATURES: BatchCache[_SignatureKey, bytes] = BatchCache(16384, 32 * MIB, _signature_bytes)


def _signatures(units: list[Unit], cjk_n: int, word_n: int, num_perm: int, seed: int) -> np.ndarray:
    """MinHash signatures of the units' shingle sets (one row per unit), kept across calls (see _SIGNATURES).

    A re-sent chat history costs the new messages' signatures only. The matrix is read-only (the rows' bytes).
    """
    keys = [(u.sources or u.text, cjk_n, word_n, num_perm, seed) for u in units]
    sets = {k: u.sh.shingles for k, u in zip(keys, units, strict=True)}

    def compute(missing: list[_SignatureKey]) -> list[bytes]:
        return [row.tobytes() for row in minhash.signatures([sets[k] for k in missing], num_perm, seed)]

    rows = _SIGNATURES.get_many(keys, compute)
    return np.frombuffer(b"".join(rows), dtype=np.uint32).reshape(len(rows), num_perm)


def _union(parts: tuple[Shingled, ...]) -> Shingled:
    return Shingled(
        frozenset().union(*(p.shingles for p in parts)),
        " ".join(p.normalized for p in parts),
        any(p.has_ngrams for p in parts),
    )


@dataclass(slots=True)
class _Memo:
    """What the rounds of one call share (see :meth:`NearDuplicates.__call__`): answers that depend on content alone.

    A round after a cut passage compares nearly the same units as the round
    before (all but the few it removed or cut): the pages it left alone have
    the same units, and it meets nearly the same candidate pairs again
    (irs_i1040nr: 105, 105 and 104 in its three rounds).
    """

    # The last round's passages, by its running text (see _find_passages).
    passages: dict[tuple, list[Passage]] = field(default_factory=dict)
    # verify's score by (unit text, unit parts, earlier shingles): all it reads, so equal keys, equal score.
    scores: dict[tuple, float] = field(default_factory=dict)
    # The paragraph units of each page by its index, with the Page they were found on (see _paragraph_units).
    pages: dict[int, tuple[Page, list[Unit]]] = field(default_factory=dict)
    # Facts of a block's text alone, by the text: its paragraph spans (BlockParagraphs) and is_short_lines.
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    short_lines: dict[str, bool] = field(default_factory=dict)


@dataclass(slots=True)
class _Pass:
    """What one comparison pass (messages, paragraphs, or passages) found."""

    removed: set[tuple[int, int]] = field(default_factory=set)  # whole blocks, (page index, block index)
    cut: dict[tuple[int, int], set[int]] = field(default_factory=lambda: defaultdict(set))  # block -> paragraphs
    spans: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)  # block -> cut passages
    changes: list[Change] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    protected: set[_Para] = field(default_factory=set)  # boilerplate kept in every section


def _paragraph_range(unit: Unit, doc: Document) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The first and last paragraph (page, block, paragraph index) a unit covers."""
    if unit.paragraph is not None:
        key = (unit.page, unit.blocks[0], unit.paragraph)
        return key, key
    last_block = unit.blocks[-1]
    paragraphs = len(split_paragraphs(doc.pages[unit.page].blocks[last_block].text))
    return (unit.page, unit.blocks[0], 0), (unit.page, last_block, paragraphs - 1)


def _passage_text(doc: Document, pieces: tuple[tuple[Hashable, int, int], ...]) -> str:
    return " ".join(doc.pages[i].blocks[j].text[lo:hi] for (i, j), lo, hi in pieces)


def quote(text: str) -> str:
    """What a report entry quotes of the text a removed unit duplicated."""
    return text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 1] + "…"


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _containment(part: frozenset[str], whole: frozenset[str]) -> float:
    return len(part & whole) / len(part) if part else 1.0


@pydantic_dataclass(config=ConfigDict(extra="forbid"), frozen=True)
class NearDuplicates:
    """Drop later paragraphs/messages whose shingle sets are at least ``threshold`` Jaccard-similar."""

    name: ClassVar[str] = "neardup"

    # 0.8 Jaccard on 5-gram/3-gram shingles: an edit of a few characters in a
    # 200-character paragraph stays above it (the resume's copies score
    # 0.87-0.97); two different paragraphs on one topic score far below.
    threshold: float = Field(0.8, gt=0.0, le=1.0)
    # 128 permutations: the standard error of the Jaccard estimate is ~0.04,
    # enough to find candidates; the decision uses the exact Jaccard anyway.
    num_perm: int = Field(128, ge=16, le=1024)
    # Fixed: the same input always gives the same result.
    seed: int = 1
    # Around 5 characters is the usual CJK choice (a word is 1-4 characters).
    cjk_ngram: int = Field(5, ge=1, le=20)
    # Word 3-grams: robust to a changed word, still specific.
    word_ngram: int = Field(3, ge=1, le=10)
    # Units with fewer normalised characters (letters and digits, a CJK
    # character counting as three: about 14 Chinese characters or 8 English
    # words; no spaces or punctuation) are never removed, not even when identical: short
    # repeated paragraphs are structure ("目录", "1", "读写能力" under each
    # language, the same date range for two jobs, a section heading that the
    # table of contents already listed) and cost a few tokens each. On the
    # corpus, 40 keeps every heading and TOC line and still catches each
    # repeated paragraph.
    min_chars: int = Field(40, ge=1)
    # Headings repeat legitimately (chapter titles in a running head, "Notes"
    # in every section).
    exempt_headings: bool = True
    # Tables are the tables stage's business: a rating legitimately repeated in four rows stays four times.
    exempt_tables: bool = True
    # Treat consecutive single-line PDF blocks that reflow would rejoin as one
    # paragraph (docsan.geometry.continues_paragraph); off compares each block on its own.
    group_lines: bool = True
    # A unit whose normalised text is at least this share digits (a table row
    # extracted as text, a record, a dated header) is only removed when it has
    # no number its kept copy lacks: there the numbers are the content
    # (two WARN notices differing only in a date and a head count are both
    # facts). Prose with a few numbers changed is still deduplicated.
    numeric_share: float = Field(0.2, ge=0.0, le=1.0)
    # A unit shorter than this (normalised characters, CJK counting three:
    # a sentence or two) with a number its kept copy lacks is a fact of its
    # own, whatever its share of digits: "the Zhuhai warehouse code is now
    # R26-534" next to "the Hangzhou warehouse code is now K12-345" scores
    # Jaccard 0.83 on 5-grams and is another fact (generated chat histories
    # lost such facts: bench/bench_chat.py).
    fact_chars: int = Field(200, ge=0)
    # A unit with a stretch of new text this long (weighted like min_chars:
    # 8 CJK characters, or about 5 English words) that its kept copy lacks
    # is not a copy: a re-pasted paragraph with a sentence added keeps the
    # sentence. Edits below it (an inserted "14", a changed word) are copies.
    min_new_chars: int = Field(24, ge=1)
    # Chat histories: compare whole messages first, so a re-sent paste goes
    # even when each of its paragraphs alone is short.
    messages: bool = True
    # Keep a paragraph that recurs once per section (docsan.text.sections.is_boilerplate)
    # in every section: read section by section (a retrieval chunk, a quoted
    # page), each copy is needed. Documents only.
    boilerplate: bool = True
    # Then cut later exact copies of passages found anywhere in the running
    # text, across paragraph and page boundaries (docsan.text.passages): a copy
    # whose paragraphs broke elsewhere than its source's matches no paragraph.
    # Documents only: in a chat history a message quoting an earlier one is
    # left to the message and paragraph passes.
    spans: bool = True
    # The least a copied passage weighs to be cut (min_chars' measure): 120 is
    # about two sentences (40 Chinese characters, 20 English words). Shorter
    # exact repeats inside paragraphs are ordinary writing: a defined term, a
    # clause that recurs in a rule book, a sentence a summary repeats.
    min_span_chars: int = Field(120, ge=32)

    def __call__(self, doc: Document) -> StageResult:
        # A cut passage can leave behind a paragraph that now repeats another whole (the
        # rest of a block after its copied sentences): another round sees it, so that
        # cleaning twice changes nothing. Each round removes text, so few are needed.
        memo = _Memo()
        result = again = self._round(doc, memo)
        for _ in range(_MAX_ROUNDS - 1):
            # Only a cut passage leaves such a paragraph behind: a round that cut none, the first or a later
            # one, ends the loop (irs_i1040nr's second round removes the rest of its cut block, and a third
            # round found nothing more).
            if not again.stats.get("passages_cut"):
                break
            again = self._round(result.document, memo)
            if not again.changes:
                break
            stats = dict(result.stats)
            for key, value in again.stats.items():
                stats[key] = stats.get(key, 0) + value
            result = StageResult(again.document, result.changes + again.changes, stats)
        return result

    def _round(self, doc: Document, memo: _Memo) -> StageResult:
        passes = []
        paragraphs = BlockParagraphs(doc, memo.spans)
        sections = find_sections(doc, paragraphs) if self.boilerplate and not doc.is_chat else NO_SECTIONS
        if doc.is_chat and self.messages:
            passes.append(self._dedupe(self._message_units(doc), doc, "message", sections, memo.scores))
        removed = {key for p in passes for key in p.removed}
        passes.append(
            self._dedupe(
                self._paragraph_units(doc, removed, paragraphs, memo.pages), doc, "paragraph", sections, memo.scores
            )
        )
        removed |= passes[-1].removed
        # Only the paragraph pass cuts paragraphs out of blocks (message units are whole blocks).
        cut = passes[-1].cut
        spans: dict[tuple[int, int], list[tuple[int, int]]] = {}
        if self.spans and not doc.is_chat:
            protected, headings = passes[-1].protected, sections.headings
            passes.append(self._cut_passages(doc, paragraphs, removed, cut, protected, headings, memo))
            removed |= passes[-1].removed
            spans = passes[-1].spans
        changes = [c for p in passes for c in p.changes]
        stats: dict[str, int | float] = defaultdict(int)
        for p in passes:
            for key, value in p.stats.items():
                stats[key] += value
        return StageResult(self.remove(doc, removed, cut, spans), changes, dict(stats))

    def remove(
        self,
        doc: Document,
        removed: set[tuple[int, int]],
        cut: dict[tuple[int, int], set[int]],
        spans: dict[tuple[int, int], list[tuple[int, int]]] | None = None,
    ) -> Document:
        """``doc`` without the ``removed`` (page, block) blocks, the ``cut`` paragraphs and the ``spans`` of others."""
        spans = spans or {}
        if not removed and not cut and not spans:
            return doc
        pages = []
        for i, page in enumerate(doc.pages):
            if any((i, j) in removed or (i, j) in cut or (i, j) in spans for j in range(len(page.blocks))):
                blocks = []
                for j, block in enumerate(page.blocks):
                    if (i, j) in removed:
                        continue
                    if (i, j) in spans:
                        block = block.with_text(
                            cut_spans(block.text, _paragraphs_cut(block.text, cut.get((i, j))) + spans[(i, j)])
                        )
                    elif (i, j) in cut:
                        kept = [p for k, p in enumerate(split_paragraphs(block.text)) if k not in cut[(i, j)]]
                        block = block.with_text("\n\n".join(kept))
                    blocks.append(block)
                page = page.with_blocks(blocks)
            pages.append(page)
        return dc_replace(doc, pages=tuple(pages))

    # -- units --------------------------------------------------------------------------------------

    def _eligible(self, block: Block) -> bool:
        if not block.text.strip():
            return False
        if block.kind is BlockKind.TABLE:
            return not self.exempt_tables
        return not (block.kind is BlockKind.HEADING and self.exempt_headings)

    def shingled(self, text: str) -> Shingled:
        """``text``'s shingles with this stage's n-gram sizes (cached across calls)."""
        return _SHINGLES.get((text, self.cjk_ngram, self.word_ngram), _shingle_text)

    def _unit(self, page: int, blocks: list[int], text: str, label: str) -> Unit | None:
        # Three times the raw length bounds the weighted normalised one (Shingled.length):
        # texts too short for either are dropped before shingling.
        if 3 * len(text) < self.min_chars:
            return None
        return Unit(page, blocks, text, self.shingled(text), label)

    def _message_units(self, doc: Document) -> list[Unit]:
        units = []
        for i, page in enumerate(doc.pages):
            idx = [j for j, b in enumerate(page.blocks) if self._eligible(b)]
            if not idx:
                continue
            texts = [page.blocks[j].text for j in idx]
            text = "\n\n".join(texts)
            if 3 * len(text) < self.min_chars:
                continue
            # A message's shingles are its paragraphs' (the paragraph pass
            # needs those anyway): only n-grams across a paragraph break are
            # missing, which a copy shares with its original all the same.
            parts = tuple(self.shingled(t) for t in texts)
            label = f"message {page.number}"
            if len(parts) == 1:
                units.append(Unit(i, idx, text, parts[0], label, parts=parts))
            else:
                units.append(Unit(i, idx, text, _union(parts), label, parts=parts, sources=tuple(texts)))
        return units

    def _paragraph_units(
        self,
        doc: Document,
        removed: set[tuple[int, int]],
        paragraphs: BlockParagraphs | None = None,
        pages: dict[int, tuple[Page, list[Unit]]] | None = None,
    ) -> list[Unit]:
        """The units of every page in reading order, but the ``removed`` blocks'.

        ``pages``: the units of pages met in an earlier round, by page index (see :class:`_Memo`), filled
        here. A page's units depend on nothing but its own blocks (their texts, kinds and boxes, which
        decide eligibility, grouping and paragraphs), its index and number, the document's kind and which
        of its blocks are ``removed``; a round rebuilds only the pages it changed (:meth:`remove` keeps the
        Page object of the others), so a page that is the same object, none of its blocks removed, has
        the same units.
        """
        paragraphs = BlockParagraphs(doc) if paragraphs is None else paragraphs
        touched = {i for i, _ in removed}
        units: list[Unit] = []
        for i, page in enumerate(doc.pages):
            known = pages.get(i) if pages is not None and i not in touched else None
            if known is not None and known[0] is page:
                units.extend(known[1])
                continue
            here = self._page_units(doc, i, removed, paragraphs)
            if pages is not None and i not in touched:
                pages[i] = (page, here)
            units.extend(here)
        return units

    def _page_units(
        self, doc: Document, i: int, removed: set[tuple[int, int]], paragraphs: BlockParagraphs
    ) -> list[Unit]:
        page = doc.pages[i]
        groups: list[list[int]] = []  # block indices
        group: list[int] = []
        edges = right_edges(page.blocks) if self.group_lines else {}
        for j, block in enumerate(page.blocks):
            if (i, j) in removed or not self._eligible(block):
                group = []
                continue
            if not (group and self.group_lines and continues_paragraph(page.blocks[group[-1]], block, edges)):
                group = []
                groups.append(group)
            group.append(j)
        units = []
        label = f"message {page.number}" if doc.is_chat else f"page {page.number}"
        for group in groups:
            spans = paragraphs[(i, group[0])] if len(group) == 1 else []
            if len(spans) > 1:
                block_text = page.blocks[group[0]].text
                for k, (lo, hi) in enumerate(spans):
                    unit = self._unit(i, group, block_text[lo:hi], label)
                    if unit is not None:
                        unit.paragraph = k
                        units.append(unit)
                continue
            unit = self._unit(i, group, "\n".join(page.blocks[j].text for j in group), label)
            if unit is not None:
                units.append(unit)
        return units

    # -- deduplication ------------------------------------------------------------------------------

    def units(self, doc: Document) -> list[Unit]:
        """The paragraphs of ``doc`` this stage compares (exemptions and ``min_chars`` applied), in reading order."""
        return [u for u in self._paragraph_units(doc, set()) if u.sh.length >= self.min_chars]

    def signatures(self, units: list[Unit]) -> tuple[dict[int, int], np.ndarray]:
        """MinHash signatures of the units that have n-grams: ``{id(unit): row}`` and the matrix of rows."""
        long_units = [u for u in units if u.sh.has_ngrams]
        matrix = _signatures(long_units, self.cjk_ngram, self.word_ngram, self.num_perm, self.seed)
        return {id(u): i for i, u in enumerate(long_units)}, matrix

    @property
    def bands(self) -> tuple[int, int]:
        """(bands, rows per band) of the LSH index."""
        # Tuned below the decision threshold: more candidates, fewer misses; the exact Jaccard check
        # removes the false ones.
        return minhash.lsh_params(max(0.3, self.threshold - 0.1), self.num_perm)

    def verify(self, unit: Unit, earlier: Shingled) -> float:
        """The exact Jaccard similarity when ``unit`` is a copy of ``earlier`` by this stage's rules, else 0."""
        score = _jaccard(unit.sh.shingles, earlier.shingles)
        return score if score >= self.threshold and self._nothing_new(unit, earlier) else 0.0

    @staticmethod
    def describe(score: float) -> str:
        return "exact duplicate" if score == 1.0 else f"near-duplicate (Jaccard {score:.2f})"

    @staticmethod
    def mark(unit: Unit, doc: Document, removed: set[tuple[int, int]], cut: dict[tuple[int, int], set[int]]) -> None:
        """Record ``unit`` as removed: its blocks, or its paragraph of a block (the whole block once all went)."""
        if unit.paragraph is None:
            removed.update((unit.page, j) for j in unit.blocks)
            return
        (j,) = unit.blocks
        cut[(unit.page, j)].add(unit.paragraph)
        if len(cut[(unit.page, j)]) == len(split_paragraphs(doc.pages[unit.page].blocks[j].text)):
            removed.add((unit.page, j))  # every paragraph went: the block goes
            del cut[(unit.page, j)]

    def _dedupe(
        self, units: list[Unit], doc: Document, scale: str, sections: Sections, scores: dict[tuple, float] | None = None
    ) -> _Pass:
        """Every unit that duplicates an earlier kept one, compared in document order (boilerplate excepted).

        ``scores``: :meth:`verify`'s answers of earlier rounds (see :class:`_Memo`), filled here.
        """
        found = _Pass()
        stats = found.stats
        scores = {} if scores is None else scores
        units = [u for u in units if u.sh.length >= self.min_chars]
        stats[f"{scale}_units"] += len(units)
        row, matrix = self.signatures(units)
        index = BandIndex(matrix, *self.bands)
        kept_rows: dict[int, Unit] = {}  # signature row -> kept unit
        exact: dict[str, Unit] = {}
        kept: dict[int, Unit] = {}  # by id: the kept units that have copies
        copies: dict[int, list[tuple[Unit, float]]] = defaultdict(list)  # kept unit (id) -> its copies
        for unit in units:
            best, score, verified = self._match(unit, row.get(id(unit)), index, kept_rows, exact, scores)
            if verified:
                stats["candidates_verified"] += verified
            if best is None:
                exact.setdefault(unit.sh.normalized, unit)
                if id(unit) in row:
                    kept_rows[row[id(unit)]] = unit
                    index.insert(row[id(unit)])
                continue
            kept[id(best)] = best
            copies[id(best)].append((unit, score))
        decisions = [
            d
            for key, found_copies in copies.items()
            for d in self._settle(kept[key], found_copies, doc, sections, found)
        ]
        order = {id(u): k for k, u in enumerate(units)}
        for unit, other, score in sorted(decisions, key=lambda d: order[id(d[0])]):
            self._remove(unit, other, score, doc, scale, found)
        return found

    def _settle(
        self, best: Unit, copies: list[tuple[Unit, float]], doc: Document, sections: Sections, found: _Pass
    ) -> list[tuple[Unit, Unit, float]]:
        """What goes of ``best`` and its copies, as (unit, the kept one it copies, similarity).

        All the copies, unless they are the sections' boilerplate: then one
        stays per section (recorded in ``found``), and the others go.
        """
        # Boilerplate is the same paragraph each time: only exact copies can be it.
        exact_copies = [u for u, score in copies if score == 1.0]
        members = [best, *exact_copies]
        spared = self._boilerplate(members, doc, sections)
        if not spared:
            return [(unit, best, score) for unit, score in copies]
        found.stats["boilerplate_kept"] += len(spared) - 1
        found.protected.update((u.page, j, u.paragraph) for u in spared.values() for j in u.blocks)
        # Any other copy goes as a copy of the one kept in its section.
        keeper = {sections.of(u.page, u.blocks[0]): u for u in spared.values()}
        named = keeper[sections.of(best.page, best.blocks[0])]
        out = [(u, keeper[sections.of(u.page, u.blocks[0])], 1.0) for u in members if id(u) not in spared]
        for unit, score in copies:
            if score == 1.0:
                continue
            if sections.of(unit.page, unit.blocks[0]) in keeper:
                out.append((unit, named, score))
            else:  # a section's own copy of the boilerplate, with a slip: it stays there too
                found.protected.update((unit.page, j, unit.paragraph) for j in unit.blocks)
                found.stats["boilerplate_kept"] += 1
        return out

    def _boilerplate(self, members: list[Unit], doc: Document, sections: Sections) -> dict[int, Unit]:
        """The copies of one paragraph to keep as boilerplate (by id): one per section, or none.

        In a section that holds it more than once (a copy pasted into the
        section brought another), the one opening or closing the section
        stays, else the last.
        """
        if sections.count < 2:
            return {}
        chosen: dict[int, tuple[Unit, Occurrence]] = {}
        for u in members:  # in document order
            o = occurrence(sections, *_paragraph_range(u, doc))
            held = chosen.get(o.section)
            if held is None or not (held[1].opens or held[1].closes):
                chosen[o.section] = (u, o)
        if not is_boilerplate([o for _, o in chosen.values()], sections.count, members[0].sh.length):
            return {}
        return {id(u): u for u, _ in chosen.values()}

    def _remove(self, unit: Unit, best: Unit, score: float, doc: Document, scale: str, found: _Pass) -> None:
        self.mark(unit, doc, found.removed, found.cut)
        reason = f"{scale} {self.describe(score)} of {best.label}"
        page = doc.pages[unit.page].number
        found.changes.append(DUPLICATE[scale].change(reason, page, unit.text, duplicate_of=quote(best.text)))
        found.stats[f"{scale}s_removed"] += 1
        found.stats["chars_removed"] += len(unit.text)

    # -- passages -----------------------------------------------------------------------------------

    def _cut_passages(
        self,
        doc: Document,
        paragraphs: BlockParagraphs,
        removed: set[tuple[int, int]],
        cut: dict[tuple[int, int], set[int]],
        protected: set[_Para],
        headings: frozenset[tuple[int, int]],
        memo: _Memo,
    ) -> _Pass:
        """Later copies of passages in what the paragraph pass left (``removed`` blocks, ``cut`` paragraphs).

        The running text skips what went already; tables and blocks of short
        lines (a form's fields or a table read as text: what reflow leaves
        unjoined) interrupt it, so no copy runs over them: their repeats are
        structure. The paragraphs kept as boilerplate, and the headings that
        open a section (``headings``), can be what a copy repeats, but are
        never cut: a title cut would merge its section into the one before,
        whose boilerplate would then look twice there. ``memo``: what the rounds share (:class:`_Memo`).
        """
        found = _Pass()
        entries: list[Entry] = []
        for i, page in enumerate(doc.pages):
            for j, block in enumerate(page.blocks):
                key = (i, j)
                if key in removed:
                    continue
                text = block.text
                if block.kind is BlockKind.TABLE and self.exempt_tables:
                    entries.append((key, None, 0, False))
                    continue
                short = memo.short_lines.get(text)
                if short is None:
                    short = memo.short_lines[text] = is_short_lines(text)
                if short:
                    entries.append((key, None, 0, False))
                    continue
                # What the block's paragraphs share, looked up once per block rather than per paragraph (every
                # block of every round comes through here): kept whole, or only some of its paragraphs.
                gone = cut.get(key, ())
                whole = (i, j, None) in protected or key in headings
                for k, (lo, hi) in enumerate(paragraphs[key]):
                    if k not in gone:
                        entries.append((key, text[lo:hi], lo, whole or (i, j, k) in protected))
        passages = _find_passages(entries, memo.passages, min_weight=self.min_span_chars, piece_weight=self.min_chars)
        if self.exempt_headings:
            # A heading repeated on its own is a heading (as in the paragraph pass); inside a copy it goes with it.
            heading = {
                (i, j) for i, p in enumerate(doc.pages) for j, b in enumerate(p.blocks) if b.kind is BlockKind.HEADING
            }
            passages = [p for p in passages if not all(key in heading for key, *_ in p.pieces)]
        if passages:
            found.stats["passages_cut"] += len(passages)
        by_block: dict[tuple[int, int], list[Passage]] = defaultdict(list)
        for passage in passages:
            for key, *_ in passage.pieces:
                by_block[key].append(passage)
        for key, here in by_block.items():
            original = doc.pages[key[0]].blocks[key[1]].text
            gone = _paragraphs_cut(original, cut.get(key))
            before = cut_spans(original, gone)
            found.spans[key] = [(lo, hi) for p in here for k, lo, hi in p.pieces if k == key]
            after = cut_spans(original, gone + found.spans[key])
            pages_of = sorted({doc.pages[k[0]].number for p in here for k, *_ in p.source})
            reason = f"repeated passage of page{'s' if len(pages_of) > 1 else ''} {', '.join(map(str, pages_of))}"
            sources = " … ".join(_passage_text(doc, p.source) for p in here)
            page = doc.pages[key[0]].number
            found.changes.append(
                PASSAGE.change(reason, page, before, replacement=after or None, duplicate_of=quote(sources))
            )
            found.stats["chars_removed"] += len(before) - len(after)
            if not after:
                found.removed.add(key)
        return found

    def _nothing_new(self, unit: Unit, earlier: Shingled) -> bool:
        """No part of ``unit`` is new next to ``earlier``, and no number either where numbers are the content."""
        if not all(_containment(p.shingles, earlier.shingles) >= self.threshold for p in unit.parts):
            return False
        known = earlier.shingles
        if novel_length(unit.text, known, cjk_n=self.cjk_ngram, word_n=self.word_ngram) >= self.min_new_chars:
            return False
        numbers = _NUMBER.findall(unit.sh.normalized)
        short = unit.sh.length < self.fact_chars
        if not short and sum(map(len, numbers)) < self.numeric_share * max(1, unit.sh.length):
            return True
        return not Counter(numbers) - Counter(_NUMBER.findall(earlier.normalized))

    def _match(
        self,
        unit: Unit,
        sig_row: int | None,
        index: BandIndex,
        kept: dict[int, Unit],
        exact: dict[str, Unit],
        scores: dict[tuple, float],
    ) -> tuple[Unit | None, float, int]:
        """The kept unit this one duplicates best, the similarity, and how many candidates were verified."""
        same = exact.get(unit.sh.normalized)
        if same is not None:
            return same, 1.0, 0
        if sig_row is None:  # too short for n-grams: exact match only
            return None, 0.0, 0
        best, best_score = None, 0.0
        candidates = sorted(index.query(sig_row))
        for key in candidates:
            earlier = kept[key].sh
            # What verify reads of the two units: its text and shingles (a function of the text, or of the
            # parts for a message) and the earlier one's shingles.
            pair = (unit.text, unit.parts, earlier)
            score = scores.get(pair)
            if score is None:
                score = scores[pair] = self.verify(unit, earlier)
            if score > best_score:
                best, best_score = kept[key], score
        return best, best_score, len(candidates)


def _find_passages(entries: list[Entry], seen: dict[tuple, list[Passage]], **options: float) -> list[Passage]:
    """:func:`find_passages`, searched once per running text: ``seen`` holds the last search's, by its text.

    What it finds depends only on the entries' texts and kept flags (the
    pieces' keys and offsets are mapped back afterwards), and a round whose
    paragraph pass took nothing the passage pass saw hands the next round the
    same running text: the round that confirms nothing more goes is then
    spared its costliest search.
    """
    content = tuple((None,) if text is None else (text, keep) for _, text, _, keep in entries)
    found = seen.get(content)
    if found is None:
        seen.clear()
        found = seen[content] = find_passages(
            [(k, text, 0, keep) for k, (_, text, _, keep) in enumerate(entries)], **options
        )

    def placed(pieces: tuple[tuple[Hashable, int, int], ...]) -> tuple[tuple[Hashable, int, int], ...]:
        return tuple((entries[k][0], entries[k][2] + lo, entries[k][2] + hi) for k, lo, hi in pieces)

    return [Passage(placed(p.pieces), placed(p.source), p.weight) for p in found]


def _paragraphs_cut(text: str, paragraphs: set[int] | None) -> list[tuple[int, int]]:
    """Where the paragraphs of ``text`` with these indices are."""
    return [span for k, span in enumerate(paragraph_spans(text)) if k in (paragraphs or ())]
