"""Running headers, footers and page numbers, confirmed by the document itself.

A line is furniture only when three independent pieces of evidence agree:

1. **Edge**: it sits in the top or bottom band of its page (by position when
   the extractor gave one, else among the first/last lines of a form-feed
   page of a text file).
2. **Recurrence at a fixed place**: the same text (digits normalised, spaces
   removed, fuzzy-matched) sits at about the same height on a *run* of pages:
   consecutive pages, or every other page for book layouts whose odd and even
   pages carry different heads. A run, not the whole document, so chapter
   heads that change with each chapter are found too.
3. **Not part of the page's data**: furniture is printed *outside* the text it
   frames (a group on pages that hold no other text frames nothing and stays),
   so its text does not occur in the body of the same page. A value
   at a page edge that also occurs in that page's body (a table's last row,
   "Layoff Permanent" in a WARN report) is one instance of a repeated data
   structure, not a running footer. If that holds on a sizeable share of the
   pages where the text recurs, the whole group is data and nothing goes.

Page numbers are recognised by form (``pagenum``) and, for bare numbers, by
arithmetic: the number minus the page index must agree with another page's, so
a column of figures at a page edge is not mistaken for page numbers.

Once heads and numbers are confirmed, their *slots* (height, font, alignment)
are known; a line printed exactly in such a slot is furniture even when its
text occurs once (a short chapter's running head, a skipped page number).

Table blocks are never touched. Furniture is dropped line by line, because a
PyMuPDF block can join a header line with a page number or with body lines.
"""

from __future__ import annotations

import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import regex
from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass
from rapidfuzz import fuzz, process

from docsan.geometry import aligned, is_one_row, is_vertical, line_centres
from docsan.model import Block, BlockKind, ChangeKind, Document, Page, Table
from docsan.report import Change, ChangeCode, StageResult
from docsan.tables.pipes import parse_pipe_table
from docsan.text.chardata import display_width
from docsan.text.pagenum import parse_page_number
from docsan.text.wrapping import ENDS_SENTENCE, FIT_RATIO, continues_on_next_page

_DIGITS = regex.compile(r"\d+")
_SPACE = regex.compile(r"\s+")
# What str.split counts as a space and _SPACE does not: the four ASCII information separators. Every
# other code point is a space to both or to neither (tests/test_furniture.py checks each one).
_SPLIT_ONLY_SPACES = ("\x1c", "\x1d", "\x1e", "\x1f")
_LETTER = regex.compile(r"\p{L}")
_ASCII_DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")

Band = Literal["top", "bottom"]
# A line by (page index, block index, line index).
Where = tuple[int, int, int]

PAGE_NUMBER = ChangeCode("furniture.page_number", ChangeKind.REMOVED, "a page number at a page edge")
RUNNING_HEADER = ChangeCode(
    "furniture.running_header", ChangeKind.REMOVED, "a line repeated at the top of a run of pages"
)
RUNNING_FOOTER = ChangeCode(
    "furniture.running_footer", ChangeKind.REMOVED, "a line repeated at the bottom of a run of pages"
)
# Short documents (2-5 pages, page numbers from one page): what a single page can show.
SHORT_PAGE_NUMBER = ChangeCode(
    "furniture.short.page_number",
    ChangeKind.REMOVED,
    "a short document's page number, by its form on its own page: its page's number, or set off by dashes",
)


def _edge_codes(name: str, description: str) -> tuple[ChangeCode, ChangeCode]:
    """The header and footer codes of one rule: ``{edge}`` in the name and ``{side}`` in the description."""
    header, footer = (
        ChangeCode(f"furniture.short.{name.format(edge=edge)}", ChangeKind.REMOVED, description.format(side=side))
        for edge, side in (("header", "top"), ("footer", "bottom"))
    )
    return header, footer


SHORT_HEADER, SHORT_FOOTER = _edge_codes(
    "{edge}", "the same line at the same place at the {side} of every page of a short document"
)
SHORT_ALTERNATING_HEADER, SHORT_ALTERNATING_FOOTER = _edge_codes(
    "alternating_{edge}",
    "a short document's line at the same place and in the same small font at the {side} of every page,"
    " its text alternating between odd and even pages",
)
SHORT_MID_PARAGRAPH_HEADER, SHORT_MID_PARAGRAPH_FOOTER = _edge_codes(
    "mid_paragraph_{edge}",
    "a short document's line at the {side} of a page, between the two halves of a paragraph that the page"
    " break cut, beside the page's confirmed furniture",
)
SHORT_BESIDE_PAGE_NUMBER = ChangeCode(
    "furniture.short.beside_page_number",
    ChangeKind.REMOVED,
    "a short document's line printed on the same line as its page number, at the page's edge",
)
# What a removal's reason says: the rule that fired.
_REASONS = {
    SHORT_PAGE_NUMBER: "page number (short document: its form on its own page)",
    SHORT_HEADER: "running header (short document: the same line at the same place on every page)",
    SHORT_FOOTER: "running footer (short document: the same line at the same place on every page)",
    SHORT_ALTERNATING_HEADER: "running header (short document: same place and font on every page, odd/even text)",
    SHORT_ALTERNATING_FOOTER: "running footer (short document: same place and font on every page, odd/even text)",
    SHORT_BESIDE_PAGE_NUMBER: "running header or footer (short document: on the page number's printed line)",
    SHORT_MID_PARAGRAPH_HEADER: "running header (short document: a paragraph runs on across it, beside furniture)",
    SHORT_MID_PARAGRAPH_FOOTER: "running footer (short document: a paragraph runs on across it, beside furniture)",
}
_NUMBER_CODES = (PAGE_NUMBER, SHORT_PAGE_NUMBER)
# How a footnote starts ("1 See 17 U.S.C. 1201", "* Unaudited", "† In thousands"): between the halves
# of a paragraph at a page's foot it is the page's text, not its furniture (rule 5 of _short_document).
_NOTE_MARK = regex.compile(r"[\d*†‡§¹²³⁴⁵⁶⁷⁸⁹⁰]")
# Blocks between a page edge and its text that rule 5 of _short_document looks at: a head or a
# footer is a few lines, with a page number; a page of many tiny blocks at its edge costs no more.
_MAX_EDGE_BLOCKS = 6
# Dashes around a bare number ("- 3 -", "— 3 —"): set off as a page number, whatever its value.
_DASHED = regex.compile(r"[-–—]\s{0,3}\d{1,5}\s{0,3}[-–—]")
_OF_TOTAL = regex.compile(r"\d{1,5}\s{0,3}/\s{0,3}(\d{1,5})")


def line_key(text: str) -> str:
    """Comparison key: NFKC, case-folded, digit runs as one ``0``, no whitespace.

    Digits go because page numbers and dates change from page to page while the
    header around them does not; whitespace goes because extractors disagree on it.
    """
    if text.isascii():
        # NFKC and case folding make ASCII its lower case, and its only digits are 0-9, so its digit
        # runs become one 0 by a few passes over the text (every digit to 0, then "00" halved until
        # none is left); the substitution builds a piece per run, and the runs are mostly in ASCII
        # (figures in a page's lines, a table's cells).
        s = text.lower().translate(_ASCII_DIGITS_TO_ZERO)
        while "00" in s:
            s = s.replace("00", "0")
    else:
        s = _DIGITS.sub("0", unicodedata.normalize("NFKC", text).casefold())
    if any(sep in s for sep in _SPLIT_ONLY_SPACES):
        return _SPACE.sub("", s)
    # The same spaces removed by str.split, several times faster than a ``regex`` substitution, which
    # builds a piece per match (a page has thousands of words).
    return "".join(s.split())


# Joins the texts that line_keys keys together: NUL is a starter that composes with nothing (so
# NFKC and case folding treat the texts on either side as apart), neither a digit nor a space, and
# no step makes one.
_KEY_SEP = "\x00"


def line_keys(texts: list[str]) -> list[str]:
    """``[line_key(t) for t in texts]``, each step run once over the ASCII texts joined and once over the others.

    A page has hundreds of lines and a table thousands of cells; one regex call
    per step and text cost more than the steps themselves. The ASCII texts go
    apart so that their join takes line_key's ASCII steps.
    """
    ascii_texts = [t.isascii() for t in texts]
    if all(ascii_texts) or not any(ascii_texts):
        return _joined_keys(texts)
    ascii_keys = iter(_joined_keys([t for t, a in zip(texts, ascii_texts, strict=True) if a]))
    other_keys = iter(_joined_keys([t for t, a in zip(texts, ascii_texts, strict=True) if not a]))
    return [next(ascii_keys) if a else next(other_keys) for a in ascii_texts]


def _joined_keys(texts: list[str]) -> list[str]:
    """``[line_key(t) for t in texts]`` by one line_key of the texts joined."""
    if not texts:
        return []
    joined = _KEY_SEP.join(texts)
    if joined.count(_KEY_SEP) != len(texts) - 1:  # a text holds a NUL of its own
        return [line_key(t) for t in texts]
    return line_key(joined).split(_KEY_SEP)


@dataclass(slots=True)
class _Candidate:
    page_index: int
    block_index: int
    line_index: int
    text: str
    key: str
    band: Band
    # Position along the page's vertical axis, 0 (top) to 1 (bottom), for PDF
    # pages; the line's rank from its edge for text pages (no geometry).
    pos: float
    has_geometry: bool
    # The block's font size when known: furniture keeps one look on every page.
    size: float | None = None

    @property
    def where(self) -> Where:
        return (self.page_index, self.block_index, self.line_index)


@dataclass(slots=True)
class _PageLines:
    candidates: list[_Candidate] = field(default_factory=list)
    body_keys: set[str] = field(default_factory=set)


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Furniture:
    """Drop running headers, footers and page numbers that recur across pages."""

    name: ClassVar[str] = "furniture"

    # Height of the top and bottom bands, as a share of the page. 12% holds
    # every header and footer of the corpus (the DMCA footer sits at 90-91%)
    # while body text rarely recurs there at a fixed height.
    band: float = Field(0.12, gt=0, lt=0.5)
    # Text pages have no geometry: this many non-empty lines at each end of a
    # form-feed page are candidates (a header is 1-3 lines).
    edge_lines: int = Field(3, ge=1, le=10)
    # A text must recur on this many pages of a run to be furniture. Three
    # keeps a heading that happens to open two pages; short documents need
    # fewer (see _in_runs), down to two, never one: one page proves nothing.
    min_pages: int = Field(3, ge=2)
    # Pages of a run (in its own step: 1, or 2 for odd/even heads) that may
    # lack the text without ending the run: chapter openings omit the head.
    max_skip: int = Field(1, ge=0)
    # rapidfuzz ratio (0-100) above which two keys are the same line; 90
    # absorbs OCR slips and a changed word-break, not a different chapter title.
    similarity: float = Field(90.0, ge=50, le=100)
    # How far (share of the page height) a line may sit from its group's usual
    # height and still count: furniture is printed at a fixed place.
    position_tolerance: float = Field(0.03, gt=0, lt=0.5)
    # If the text also occurs in the page body on at least this share of the
    # pages where it sits at the edge, it is data (a repeated table value).
    data_share: float = Field(0.25, gt=0, le=1)
    # Short documents have too few pages for runs: there the evidence one page
    # can show counts too (see _short_document); off leaves short documents to
    # the recurrence rules alone.
    short_documents: bool = True
    # What "short" is: up to five pages, where a run of three pages of the
    # same head is most of the document or more than it has.
    short_pages: int = Field(5, ge=1, le=20)

    def __call__(self, doc: Document) -> StageResult:
        if doc.is_chat:
            # A chat message is not a printed page: a line every message
            # repeats is the repeats stage's business, not a running head.
            return self._apply(doc, {}, Counter())
        pages = [self._page_lines(pi, p) for pi, p in enumerate(doc.pages)]
        numbers = self._page_numbers(doc, pages)
        recurring, stats = self._recurring(doc, pages, numbers)
        found = {**numbers, **recurring}
        if self.short_documents and len(doc.pages) <= self.short_pages:
            found.update(self._short_document(doc, pages, found))
        return self._apply(doc, found, stats)

    # -- candidates ------------------------------------------------------

    def _page_lines(self, pi: int, page: Page) -> _PageLines:
        out = _PageLines()
        # Tables are data, never furniture, and their cells count as body text.
        tables = {bi: grid for bi, block in enumerate(page.blocks) if (grid := _table_grid(block)) is not None}
        for grid in tables.values():
            out.body_keys.update(line_keys([c.text for row in grid.rows for c in row if c.text]))
        geometric = bool(page.height and page.width) and all(b.bbox is not None for b in page.blocks)
        if geometric:
            self._geometric_candidates(page, out, set(tables))
        else:
            self._text_candidates(page, out, set(tables))
        for c in out.candidates:
            c.page_index = pi
        out.body_keys.discard("")
        return out

    def _band_at(self, pos: float) -> Band | None:
        """The band a line centred at ``pos`` (a fraction of the page along its reading axis) lies in; None: body."""
        return "top" if pos < self.band else "bottom" if pos > 1 - self.band else None

    def _geometric_candidates(self, page: Page, out: _PageLines, tables: set[int]) -> None:
        blocks = [(bi, block, block.text.split("\n")) for bi, block in enumerate(page.blocks)]
        blocks = [(bi, block, lines) for bi, block, lines in blocks if bi not in tables and block.bbox is not None]
        keys = line_keys([line for _, _, lines in blocks for line in lines])
        end = 0
        for bi, block, lines in blocks:
            start, end = end, end + len(lines)
            vertical = is_vertical(block)
            extent = (page.width if vertical else page.height) or 1.0
            centres = line_centres(block, vertical)
            # The centres run evenly from one end of the block to the other: with both ends between
            # the bands, every line is body (an empty key among them goes with _page_lines' discard).
            if self._band_at(centres[0] / extent) is None and self._band_at(centres[-1] / extent) is None:
                out.body_keys.update(keys[start:end])
                continue
            for li, (line, centre, key) in enumerate(zip(lines, centres, keys[start:end], strict=True)):
                if not key:
                    continue
                pos = centre / extent
                band = self._band_at(pos)
                if band is None:
                    out.body_keys.add(key)
                else:
                    out.candidates.append(_Candidate(-1, bi, li, line, key, band, pos, True, block.font_size))

    def _text_candidates(self, page: Page, out: _PageLines, tables: set[int]) -> None:
        every = [
            (bi, li, line)
            for bi, block in enumerate(page.blocks)
            if bi not in tables
            for li, line in enumerate(block.text.split("\n"))
        ]
        keys = line_keys([line for _, _, line in every])
        lines = [(bi, li, line, key) for (bi, li, line), key in zip(every, keys, strict=True) if key]
        n = len(lines)
        # On a short page the edges shrink: the two edges together leave at least one line of what
        # the page is about (a third at each end was too few for a document's short last page: a
        # two-line footer block under two lines of text was body there, and went on no page).
        edge = min(self.edge_lines, max(1, (n - 1) // 2))
        # A line of a paragraph that runs on past the edge is the paragraph's, not
        # furniture: on a text page a head or footer is a paragraph of its own.
        first_rank: dict[int, int] = {}
        last_rank: dict[int, int] = {}
        for rank, (bi, _, _, _) in enumerate(lines):
            first_rank.setdefault(bi, rank)
            last_rank[bi] = rank
        for rank, (bi, li, line, key) in enumerate(lines):
            from_end = n - 1 - rank
            if rank < edge and last_rank[bi] < edge:
                out.candidates.append(_Candidate(-1, bi, li, line, key, "top", rank, False))
            elif from_end < edge and n - 1 - first_rank[bi] < edge:
                out.candidates.append(_Candidate(-1, bi, li, line, key, "bottom", from_end, False))
            else:
                out.body_keys.add(key)

    # -- page numbers ----------------------------------------------------

    def _page_numbers(self, doc: Document, pages: list[_PageLines]) -> dict[Where, ChangeCode]:
        """The page numbers: explicit forms at any edge; a bare number only when it counts pages.

        A bare number counts pages when its value minus the page index (its
        offset) is the same on another page, at the same place. A number whose
        block holds other letterless lines is a cell of a column or row of
        figures, not a page number.
        """
        found: list[tuple[_Candidate, int, bool]] = []
        for lines in pages:
            for c in lines.candidates:
                number = parse_page_number(c.text)
                if number is None:
                    continue
                block = doc.pages[c.page_index].blocks[c.block_index]
                if not number.explicit and _letterless_lines(block) > 1:
                    continue
                found.append((c, number.value - doc.pages[c.page_index].number, number.explicit))
        # Bare numbers form series by (band, offset); the largest series that
        # sits at one place on at least two pages is the page numbering, and a
        # page keeps at most one page number per band.
        series: dict[tuple[Band, int], list[_Candidate]] = defaultdict(list)
        for c, offset, explicit in found:
            if not explicit:
                series[(c.band, offset)].append(c)
        confirmed = [c for c, _, explicit in found if explicit]
        numbered: set[tuple[int, Band]] = {(c.page_index, c.band) for c in confirmed}
        for members in sorted(series.values(), key=len, reverse=True):
            placed = [
                c for c in _at_usual_place(members, self.position_tolerance) if (c.page_index, c.band) not in numbered
            ]
            if len({c.page_index for c in placed}) < 2 or len(placed) != len({c.page_index for c in placed}):
                continue
            confirmed.extend(placed)
            numbered.update((c.page_index, c.band) for c in placed)
        # Numbering that skips (a sampled or excerpted document) is still a
        # page number when it is the only number at its page edge and sits
        # where confirmed page numbers sit.
        slots = {(c.band, round(c.pos / self.position_tolerance)) for c in confirmed}
        numbers_at_edge = Counter((c.page_index, c.band) for c, _, explicit in found if not explicit)
        out = {c.where: PAGE_NUMBER for c in confirmed}
        for c, *_ in found:
            slot = round(c.pos / self.position_tolerance)
            at_slot = any((c.band, slot + d) in slots for d in (-1, 0, 1))
            alone = numbers_at_edge[(c.page_index, c.band)] == 1 and (c.page_index, c.band) not in numbered
            if at_slot and alone:
                out[c.where] = PAGE_NUMBER
        return out

    # -- recurring lines -------------------------------------------------

    def _recurring(
        self, doc: Document, pages: list[_PageLines], taken: dict[Where, ChangeCode]
    ) -> tuple[dict[Where, ChangeCode], Counter[str]]:
        """Running heads and footers of lines not ``taken`` already, and the stage's group counters."""
        groups = self._group(pages, taken)
        found: dict[Where, ChangeCode] = {}
        stats: Counter[str] = Counter()
        confirmed: list[_Candidate] = []
        for group in groups:
            if not any(pages[c.page_index].body_keys for c in group):
                # Furniture frames text: on pages holding nothing else, the lines are the text itself
                # (qpdf's 30 pages of "Potato N" came out empty).
                stats["groups_kept_without_body"] += 1
                continue
            in_body = {c.page_index for c in group if c.key in pages[c.page_index].body_keys}
            if len(in_body) >= self.data_share * len({c.page_index for c in group}):
                stats["groups_kept_as_data"] += 1
                continue
            # A title in capitals at the head's place shows the head's words recur there (the run counts it)
            # but is not the head itself (it stays).
            placed = _at_usual_place(group, self.position_tolerance, capitals=False)
            placed = [c for c in placed if c.key not in pages[c.page_index].body_keys]
            alike = {c.where for c in _in_usual_capitals(placed)}
            kept = [c for c in self._in_runs(doc, placed) if c.where in alike]
            if kept:
                stats["groups_removed"] += 1
            for c in kept:
                found.setdefault(c.where, _reason(c))
            confirmed.extend(c for c in kept if c.has_geometry)
        slot_matches = self._at_confirmed_slots(doc, pages, confirmed, {**taken, **found})
        if slot_matches:
            stats["slot_matches"] += len(slot_matches)
        return {**found, **slot_matches}, stats

    def _at_confirmed_slots(
        self, doc: Document, pages: list[_PageLines], confirmed: list[_Candidate], taken: dict[Where, ChangeCode]
    ) -> dict[Where, ChangeCode]:
        """Chapter heads printed on one or two pages only, in the exact slot of confirmed furniture.

        Books print each chapter's name in the running head: a short chapter
        shows its name once, too few for a run. It still sits at the height
        and in the font of the heads confirmed elsewhere, which is the
        evidence used here, three times tighter than for group members, and
        only for a line with nothing but furniture between it and the page
        edge (a body line that happens to start at that height is not), whose
        block is aligned like the confirmed one (same left or right margin, or
        same centre): a layout prints its heads flush or centred, always alike.
        PDF pages only: on text pages "the same slot" would be every first line.
        """
        # Keyed by rounded place so a long document's thousands of confirmed
        # lines make a handful of slots.
        slots = {
            (c.band, round(c.pos, 3), round(c.size, 1), round(_block(doc, c).bbox.x0), round(_block(doc, c).bbox.x1)): c
            for c in confirmed
            if c.size
        }
        if not slots:
            return {}
        limit = self.position_tolerance / 3
        # Lines matched here count as furniture for the candidates after them (_outermost).
        removed = dict(taken)
        for page, lines in zip(doc.pages, pages, strict=True):
            for c in lines.candidates:
                where = c.where
                if where in removed or not c.has_geometry or not c.size or not _LETTER.search(c.key):
                    continue
                # No body-text test here: a chapter head also titles its chapter
                # in the body; the geometry below is the evidence.
                if not _outermost(page, c, removed):
                    continue
                if any(
                    s.band == c.band
                    and abs(s.pos - c.pos) <= limit
                    and s.size
                    and abs(s.size - c.size) <= 0.05 * s.size
                    and aligned(_block(doc, s), _block(doc, c))
                    for s in slots.values()
                ):
                    removed[where] = _reason(c)
        return {w: code for w, code in removed.items() if w not in taken}

    def _group(self, pages: list[_PageLines], taken: dict[Where, ChangeCode]) -> list[list[_Candidate]]:
        """Cluster candidates of each band by fuzzy-equal keys; only lines with letters take part.

        Lines without letters (numbers, dates, dashes) are left to the page
        number test: recurrence of "0" after digit normalisation means nothing.

        A key is compared only with the groups that have a member within a
        run's reach of one of its pages (``_in_runs`` keeps nothing farther
        apart), not with every group of the document: a long report whose
        every page opens with its own line would otherwise cost a comparison
        per pair of pages (20,000 pages: 180 s, now linear).
        """
        by_band: dict[Band, list[_Candidate]] = defaultdict(list)
        for lines in pages:
            for c in lines.candidates:
                if c.where not in taken and _LETTER.search(c.key):
                    by_band[c.band].append(c)
        # Two pages of one run are at most this many pages apart (a skip, in steps of two for odd/even heads).
        reach = 2 * (self.max_skip + 1)
        groups: list[list[_Candidate]] = []
        for cands in by_band.values():
            pages_of: dict[str, set[int]] = defaultdict(set)
            for c in cands:
                pages_of[c.key].add(c.page_index)
            rep_of: dict[str, str] = {}
            # Groups by their representative key, in the order they were founded; the groups on each page.
            founded: dict[str, int] = {}
            on_page: dict[int, set[str]] = defaultdict(set)
            # Most frequent keys first, so a group is named by its usual form
            # and a one-off variant joins it rather than the other way round.
            for key, _ in Counter(c.key for c in cands).most_common():
                # Each page in reach once: a line on many pages has most of them in reach of several.
                reached = {q for p in pages_of[key] for q in range(p - reach, p + reach + 1)}
                near = set().union(*(on_page[q] for q in reached if q in on_page))
                # Scored as the set it is, not in founding order, which settles only a tie between matches:
                # of the reps that match, the best, and of those the first founded. Most keys match none.
                matches = process.extract(key, near, scorer=fuzz.ratio, score_cutoff=self.similarity, limit=None)
                rep = min(matches, key=lambda m: (-m[1], founded[m[0]]))[0] if matches else key
                founded.setdefault(rep, len(founded))
                rep_of[key] = rep
                for p in pages_of[key]:
                    on_page[p].add(rep)
            clusters: dict[str, list[_Candidate]] = defaultdict(list)
            for c in cands:
                clusters[rep_of[c.key]].append(c)
            groups.extend(g for g in clusters.values() if len({c.page_index for c in g}) >= 2)
        return groups

    def _in_runs(self, doc: Document, group: list[_Candidate]) -> list[_Candidate]:
        """The candidates that belong to a run of at least the needed number of pages.

        A group whose pages are (nearly) all odd or all even is a book layout's
        alternating head: its run steps over the other parity, and the number
        of pages needed is judged among pages of that parity only.
        """
        numbers = sorted({doc.pages[c.page_index].number for c in group})
        if not numbers:
            return []
        parities = Counter(n % 2 for n in numbers)
        step = 2 if len(numbers) >= 2 and max(parities.values()) >= 0.8 * len(numbers) else 1
        view_pages = len(doc.pages) if step == 1 else (len(doc.pages) + 1) // 2
        needed = max(2, min(self.min_pages, view_pages))
        runs: list[list[int]] = [[numbers[0]]]
        for n in numbers[1:]:
            if n - runs[-1][-1] > (self.max_skip + 1) * step:
                runs.append([n])
            else:
                runs[-1].append(n)
        good = {n for run in runs if len(run) >= needed for n in run}
        return [c for c in group if doc.pages[c.page_index].number in good]

    # -- short documents -------------------------------------------------

    def _short_document(
        self, doc: Document, pages: list[_PageLines], taken: dict[Where, ChangeCode]
    ) -> dict[Where, ChangeCode]:
        """Furniture that one page shows, on a document too short for runs (the rules in order).

        1. A bare page number at a page's outermost edge (nothing but
           furniture between it and the edge, alone among the figures of its
           block) that says its page's own number, or is set off by dashes
           (``- 251 -``), or counts the document's pages (``2 / 3``).
        2. On a PDF page, a line printed on the page number's line (side by
           side with it at the page's edge, in its font size): a footer such
           as "Confidential" left of "- 251 -", even on a single page.
        3. The same line (digits aside) at the same place on every page of a
           document of two pages or more, even where one page's body holds
           it too (a title page printing the running title).
        4. On every page, at its outermost edge, a line at the same place, in
           the same font and one smaller than the body's, whose text takes
           one value on odd pages and another on even ones: a book layout's
           alternating heads, each printed on one page or two. Text pages
           (no fonts) need three pages, so that one of the texts recurs.
        5. A line at a page break between the two halves of a paragraph (the
           last block of one page does not end its sentence and the next
           page's first block goes on with it, as reflow joins them), next
           to furniture already found at that break: a heading or a
           caption does not stand inside a sentence, a running head does.
           Not a line that ends a sentence or starts like a footnote.
        """
        out: dict[Where, ChangeCode] = {}
        for lines in pages:
            for c in lines.candidates:
                if c.where not in taken and self._own_page_number(doc, pages, c, taken):
                    out[c.where] = SHORT_PAGE_NUMBER
        # Rule 3 before rule 2: a footer line beside page 2's number goes by rule 2, and page 1's copy of it,
        # which the title page's body also prints (the DMCA summary's date), is then seen on one page only.
        for group in self._group(pages, {**taken, **out}) if len(doc.pages) >= 2 else ():
            placed = _at_usual_place(group, self.position_tolerance)
            in_body = {c.page_index for c in placed if c.key in pages[c.page_index].body_keys}
            every = len(placed) == len(doc.pages) == len({c.page_index for c in placed})
            if every and len({c.key for c in placed}) == 1 and len(in_body) <= 1:
                for c in placed:
                    out[c.where] = SHORT_HEADER if c.band == "top" else SHORT_FOOTER
        for page, lines in zip(doc.pages, pages, strict=True):
            out.update(_beside_page_number(page, lines, {**taken, **out}))
        if len(doc.pages) < 2:
            return out
        for band in ("top", "bottom"):
            out.update(self._alternating(doc, pages, band, {**taken, **out}))
        for pi in range(len(doc.pages) - 1):
            out.update(self._mid_paragraph(doc, pages, pi, {**taken, **out}))
        return out

    def _mid_paragraph(
        self, doc: Document, pages: list[_PageLines], pi: int, taken: dict[Where, ChangeCode]
    ) -> dict[Where, ChangeCode]:
        """Rule 5 of _short_document at the break after page ``pi``.

        Each half is tried as each block from the break inwards that stands at the edge, and the
        first that does not: a paragraph's one-line end at the foot of a page is an edge line as
        much as a footer is. The fewest blocks between the halves win.
        """
        tail = _edge_blocks(doc.pages[pi], pages[pi], pi, "bottom", taken)
        head = _edge_blocks(doc.pages[pi + 1], pages[pi + 1], pi + 1, "top", taken)
        options = sorted(((i, j) for i in range(len(tail)) for j in range(len(head))), key=sum)
        for i, j in options:
            if not all(at_edge for _, at_edge, _ in tail[:i] + head[:j]):
                continue  # a block between the halves that is not at the edge: body text
            between = [w for lines, _, _ in tail[:i] + head[:j] for w in lines]
            new = [w for w in between if w not in taken]
            if not new or len(new) == len(between):
                continue  # nothing to remove, or no furniture confirmed at this break
            texts = [doc.pages[w[0]].blocks[w[1]].text.split("\n")[w[2]].strip() for w in new]
            if any(not _LETTER.search(t) or t[-1] in ENDS_SENTENCE or _NOTE_MARK.match(t) for t in texts):
                continue  # a figure or a number no rule confirmed; a sentence's end; a footnote
            left, right = tail[i][2], head[j][2]
            if left is None or right is None or (tail[i][1] and _NOTE_MARK.match(left.text.lstrip())):
                continue  # a footnote at the page's foot is no first half: the paragraph is above it
            if not continues_on_next_page(left, right, FIT_RATIO, _column(doc.pages[pi : pi + 2])):
                continue
            return {w: SHORT_MID_PARAGRAPH_FOOTER if w[0] == pi else SHORT_MID_PARAGRAPH_HEADER for w in new}
        return {}

    def _own_page_number(
        self, doc: Document, pages: list[_PageLines], c: _Candidate, taken: dict[Where, ChangeCode]
    ) -> bool:
        number = parse_page_number(c.text)
        if number is None or number.explicit or number.roman:
            return False
        text = c.text.strip()
        total = _OF_TOTAL.fullmatch(text)
        counts_pages = total is not None and int(total.group(1)) == len(doc.pages)
        page = doc.pages[c.page_index]
        if not (number.value == page.number or _DASHED.fullmatch(text) or counts_pages):
            return False
        if _letterless_lines(page.blocks[c.block_index]) > 1:
            return False  # one figure of a column or a row of figures
        return self._at_edge(page, pages[c.page_index], c, taken)

    def _at_edge(self, page: Page, lines: _PageLines, c: _Candidate, taken: dict[Where, ChangeCode]) -> bool:
        """Nothing but furniture between the line and its page edge."""
        if c.has_geometry:
            return _outermost(page, c, taken)
        return all(o.where in taken for o in lines.candidates if o.band == c.band and o.pos < c.pos)

    def _alternating(
        self, doc: Document, pages: list[_PageLines], band: Band, taken: dict[Where, ChangeCode]
    ) -> dict[Where, ChangeCode]:
        """Rule 4 of _short_document for one band."""
        chosen: list[_Candidate] = []
        for page, lines in zip(doc.pages, pages, strict=True):
            # The head of every page, whether a run already confirmed it or not.
            here = [
                c
                for c in lines.candidates
                if c.band == band
                and taken.get(c.where) not in _NUMBER_CODES
                and _LETTER.search(c.key)
                and c.key not in lines.body_keys
                and self._at_edge(page, lines, c, taken)
            ]
            if not here:
                return {}
            # The outermost: nearest the edge (text pages count lines from the edge already).
            chosen.append(min(here, key=lambda c: c.pos if band == "top" or not c.has_geometry else -c.pos))
        odd = {c.key for c in chosen if doc.pages[c.page_index].number % 2}
        even = {c.key for c in chosen if not doc.pages[c.page_index].number % 2}
        if len(odd) != 1 or len(even) != 1 or odd == even:
            return {}
        if max(c.pos for c in chosen) - min(c.pos for c in chosen) > self.position_tolerance:
            return {}
        if chosen[0].has_geometry:
            sizes = [c.size for c in chosen]
            body = _body_size(doc)
            if any(s is None for s in sizes) or body is None:
                return {}
            low, high = min(sizes), max(sizes)
            if high - low > 0.05 * high or high >= body:
                return {}
        elif len(doc.pages) < 3:
            return {}
        code = SHORT_ALTERNATING_HEADER if band == "top" else SHORT_ALTERNATING_FOOTER
        return {c.where: code for c in chosen if c.where not in taken}

    # -- output ----------------------------------------------------------

    def _apply(self, doc: Document, remove: dict[Where, ChangeCode], found: Counter[str]) -> StageResult:
        """Drop the lines in ``remove``; ``found`` holds the counters of the search for them."""
        stats = Counter(found)
        changes: list[Change] = []
        new_pages: list[Page] = []
        by_page: dict[int, dict[tuple[int, int], ChangeCode]] = defaultdict(dict)
        for (pi, bi, li), code in remove.items():
            by_page[pi][(bi, li)] = code
        for pi, page in enumerate(doc.pages):
            marked = by_page.get(pi)
            if not marked:
                new_pages.append(page)
                continue
            blocks: list[Block] = []
            touched = {bi for bi, _ in marked}
            for bi, block in enumerate(page.blocks):
                if bi not in touched:
                    blocks.append(block)
                    continue
                lines = block.text.split("\n")
                kept = []
                for li, line in enumerate(lines):
                    code = marked.get((bi, li))
                    if code is None:
                        kept.append(line)
                        continue
                    reason = _REASONS.get(code, code.stat.replace("_", " "))
                    changes.append(code.change(reason, page.number, line))
                    stats["lines_removed"] += 1
                    stats[code.stat + "s"] += 1
                if len(kept) == len(lines):
                    blocks.append(block)
                elif any(line.strip() for line in kept):
                    blocks.append(block.with_text("\n".join(kept)))
                else:
                    stats["blocks_dropped"] += 1
            if page.text.strip() and not any(b.text.strip() for b in blocks):
                stats["pages_emptied"] += 1
            new_pages.append(page.with_blocks(blocks))
        base = {"lines_removed": 0, "pages_emptied": 0, "blocks_dropped": 0, "groups_removed": 0}
        return StageResult(doc.with_pages(new_pages), changes, {**base, **stats})


def _outermost(page: Page, c: _Candidate, remove: dict[Where, ChangeCode]) -> bool:
    """True for a one-row block with nothing but furniture between it and its page edge."""
    block = page.blocks[c.block_index]
    own = block.bbox
    # A head is one printed line (its pieces side by side); a block of stacked
    # lines at the edge is body text that starts high or ends low.
    if own is None or is_vertical(block) or not is_one_row(block):
        return False
    for bi, block in enumerate(page.blocks):
        box = block.bbox
        if bi == c.block_index or box is None:
            continue
        # By centre: neighbouring PyMuPDF blocks overlap by a fraction of a point.
        centre = (box.y0 + box.y1) / 2
        outside = centre < own.y0 if c.band == "top" else centre > own.y1
        if not outside:
            continue
        lines = block.text.split("\n")
        if any(line.strip() and (c.page_index, bi, li) not in remove for li, line in enumerate(lines)):
            return False
    return True


def _beside_page_number(page: Page, lines: _PageLines, taken: dict[Where, ChangeCode]) -> dict[Where, ChangeCode]:
    """Rule 2 of Furniture._short_document on one page: the lines on a page number's printed line."""
    numbers = [c for c in lines.candidates if c.has_geometry and c.size and taken.get(c.where) in _NUMBER_CODES]
    out: dict[Where, ChangeCode] = {}
    for c in lines.candidates:
        if c.where in taken or not c.has_geometry or not c.size or not _LETTER.search(c.key):
            continue
        beside = any(
            n.band == c.band
            and abs(n.pos - c.pos) * (page.height or 0.0) <= 0.5 * max(n.size or 0.0, c.size)
            and abs((n.size or 0.0) - c.size) <= 0.15 * c.size
            for n in numbers
        )
        # The geometry first: only a line on a number's row pays for the look at the page's other blocks.
        if beside and c.key not in lines.body_keys and _outermost(page, c, {**taken, **out}):
            out[c.where] = SHORT_BESIDE_PAGE_NUMBER
    return out


def _edge_blocks(
    page: Page, lines: _PageLines, pi: int, band: Band, taken: dict[Where, ChangeCode]
) -> list[tuple[list[Where], bool, Block | None]]:
    """The page's text blocks from its ``band`` edge inwards, up to the first that is not all edge lines.

    Each: its lines (where); whether all of them are edge lines (candidates of the band) or
    taken, so that the block can stand between the halves of a paragraph; and the block as it
    stands once the ``taken`` lines are gone (None when nothing is left), to be tried as a half.
    """
    edge = {(c.block_index, c.line_index) for c in lines.candidates if c.band == band}
    order = range(len(page.blocks) - 1, -1, -1) if band == "bottom" else range(len(page.blocks))
    out: list[tuple[list[Where], bool, Block | None]] = []
    for bi in order:
        block = page.blocks[bi]
        if block.kind is not BlockKind.TEXT:
            break
        text = block.text.split("\n")
        keyed = [(pi, bi, li) for li, key in enumerate(line_keys(text)) if key]
        if not keyed:
            continue
        kept = [line for li, line in enumerate(text) if (pi, bi, li) not in taken]
        half = block.with_text("\n".join(kept)) if any(line.strip() for line in kept) else None
        at_edge = all(w in taken or w[1:] in edge for w in keyed)
        out.append((keyed, at_edge, half))
        if not at_edge or len(out) > _MAX_EDGE_BLOCKS:
            break
    return out


def _column(pages: list[Page]) -> int | None:
    """The pages' column, in display width: their widest line of a wrapped paragraph (a block of two lines or more).

    Rule 5 of Furniture._short_document measures a single line at a break against it: the
    halves of a paragraph cut after its first line (one line each side) show no column of their own.
    """
    widths = [
        display_width(line)
        for page in pages
        for b in page.blocks
        if b.kind is BlockKind.TEXT and "\n" in b.text.strip()
        for line in b.text.split("\n")
    ]
    return max(widths, default=None)


def _table_grid(block: Block) -> Table | None:
    """The block's grid: an extractor's table, or pipe text the tables stage will read as one."""
    if block.kind is BlockKind.TABLE:
        return block.table or Table(())
    return parse_pipe_table(block.text)


def _block(doc: Document, c: _Candidate) -> Block:
    return doc.pages[c.page_index].blocks[c.block_index]


def _reason(c: _Candidate) -> ChangeCode:
    return RUNNING_HEADER if c.band == "top" else RUNNING_FOOTER


def _body_size(doc: Document) -> float | None:
    """The body text's font size: the median over text blocks of two lines or more, by characters."""
    sizes = sorted(
        (b.font_size, len(b.text))
        for _, b in doc.blocks()
        if b.kind is BlockKind.TEXT and b.font_size and "\n" in b.text
    )
    total = sum(n for _, n in sizes)
    seen = 0
    for size, n in sizes:
        seen += n
        if seen >= total / 2:
            return size
    return None


def _letterless_lines(block: Block) -> int:
    return sum(1 for line in block.text.split("\n") if line.strip() and not _LETTER.search(line))


def _at_usual_place(group: list[_Candidate], tolerance: float, *, capitals: bool = True) -> list[_Candidate]:
    """Members at the group's usual place and in its usual font size (and capitals: ``_in_usual_capitals``).

    Usual = the median. Position within ``tolerance`` of the page (text pages:
    within one line); size within 15%, so a title page that prints the running
    title large (DMCA page 1) keeps its title.
    """
    median = _median([c.pos for c in group])
    limit = tolerance if group[0].has_geometry else 1.0
    sizes = [c.size for c in group if c.size]
    usual_size = _median(sizes) if sizes else None
    placed = [
        c
        for c in group
        if abs(c.pos - median) <= limit
        and (usual_size is None or not c.size or abs(c.size - usual_size) <= 0.15 * usual_size)
    ]
    return _in_usual_capitals(placed) if capitals else placed


def _in_usual_capitals(group: list[_Candidate]) -> list[_Candidate]:
    """Members set in capitals as most members are, or not as most are not; those with no cased letters.

    A running line is printed alike on every page, so a member in capitals where
    most are not (or the reverse) is a title that the key's case folding matched:
    the DMCA title page's ``THE DIGITAL MILLENNIUM COPYRIGHT ACT OF 1998`` where the
    heads print ``The Digital Millennium Copyright Act of 1998``, the only look a
    text page has. Where neither form is most members', neither is the usual one.
    """
    cased = Counter(form for c in group if (form := _in_capitals(c.text)) is not None)
    usual = next((form for form, n in cased.items() if 2 * n > sum(cased.values())), None)
    return [c for c in group if _in_capitals(c.text) in (None, usual)]


def _in_capitals(text: str) -> bool | None:
    """Whether the line's cased letters are all capitals; None when it has none (CJK, figures)."""
    if text.upper() == text.lower():
        return None
    return text == text.upper()


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
