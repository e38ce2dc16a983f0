"""Repeated passages in a document's running text, whatever its paragraph boundaries and page breaks.

A passage pasted twice rarely keeps its paragraph breaks: a page break falls
inside one copy, or a heading (``5.3.5 小节``) starts a paragraph in one copy
and stands alone in the other. Paragraph-level units then no longer line up,
so they are compared here as one running text: every paragraph in reading
order, without whitespace (line breaks, paragraph breaks and page breaks are
layout), with separators no copy crosses where something interrupts the
text (a table). :func:`docsan.text.copies.find_copies` finds the later
copies; each is then narrowed to whole sentences (:func:`_snap`) and handed
back as pieces of blocks to cut.

Stretches that repeat with a short period (a column of equal table values
read as text, ``Layoff Permanent`` down a page, leader dots) are left out of
every copy: those are data or layout, and the tandem rules judge them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import regex

from docsan.text.chardata import CJK_LETTERS, CJK_WEIGHT
from docsan.text.copies import Copy, Windows, find_copies
from docsan.text.rolling_hash import prefix_hashes
from docsan.text.runs import find_runs

# A window of 16 characters: copies of 31 or more are always found; minimum lengths are above that.
WINDOW = 16
# Repeats of a period up to this many characters that run for three periods and two windows are data.
_PERIODIC = 32
_CJK_LETTER = regex.compile(rf"[{CJK_LETTERS}]")
# What ends a sentence: a CJK full stop (or the semicolon that ends each item of a Chinese
# list) wherever it stands; a Latin one before whitespace and not after an abbreviation (see
# _Running.sentence_end). Commas, colons and Latin semicolons do not: cutting a copy at a
# clause leaves half a sentence whose meaning has changed.
_CJK_STOPS = frozenset("。！？；…")
_LATIN_STOPS = frozenset(".!?")
# Commas: a paragraph edge right after one is a block the extractor split inside a sentence.
_CLAUSE_MARKS = frozenset(",，、")
# Closing quotes and brackets after a stop ("。”", ".)") still end the sentence.
_CLOSERS = frozenset("”’」』）】》)]\"'")
# Words a full stop follows without ending the sentence (besides single letters and dotted ones: "U.S.").
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "no",
        "nos",
        "vol",
        "vols",
        "fig",
        "figs",
        "pp",
        "p",
        "ch",
        "sec",
        "art",
        "para",
        "inc",
        "ltd",
        "co",
        "corp",
        "jr",
        "sr",
        "vs",
        "etc",
        "eg",
        "ie",
        "cf",
    ]
)

Piece = tuple[Hashable, int, int]  # (block key, start, end) in the block's text
# (block key, text, where the text starts in the block's text, kept): one paragraph; text None:
# a separator. A block may be given as several entries, one per paragraph. A kept paragraph can
# be the source of a copy but is never cut (boilerplate the caller keeps in every section).
Entry = tuple[Hashable, str | None, int, bool]


@dataclass(frozen=True, slots=True)
class Passage:
    """A later copy of earlier text: the pieces of blocks it covers, and those of its source."""

    pieces: tuple[Piece, ...]
    source: tuple[Piece, ...]
    # Letters and digits in it, a CJK letter counting CJK_WEIGHT.
    weight: int


@dataclass(slots=True)
class _Running:
    keys: list[Hashable]  # per entry
    kept: np.ndarray  # per view position: inside a kept entry
    text: str  # the view: every entry's characters but whitespace, NUL at separators
    codes: np.ndarray  # the view's code points; -1 - position at separators and ruled-out stretches
    owner: np.ndarray  # index of the entry, -1 at separators
    orig: np.ndarray  # offset in the owner's block text
    weights: np.ndarray
    cjk_stop: np.ndarray
    latin_stop: np.ndarray
    closer: np.ndarray
    gap: np.ndarray  # gap[v]: whitespace or an entry boundary before view position v (True at both ends)
    # may_start[v] (v in [0, n]): False where boundary(v) is surely False (no entry edge, no stop before v),
    # so that _snap asks boundary() only where one can be.
    may_start: np.ndarray

    def sentence_end(self, v: int) -> bool:
        """Does a sentence end right before view position v (0 < v < n)?"""
        u = v - 1
        if self.closer[u] and u >= 1 and (self.cjk_stop[u - 1] or self.latin_stop[u - 1]):
            u -= 1
        if self.cjk_stop[u]:
            return True
        if not (self.latin_stop[u] and self.gap[v]) or self.text[v].islower():
            return False
        if self.gap[u] and (u == 0 or self.owner[u - 1] != self.owner[u]):
            # The same bullet opening a paragraph ("! Title I, the ..."): the sentence starts after it.
            return True
        if self.gap[u] and self.owner[u - 1] == self.owner[u]:
            # A stop standing alone after a sentence end ("below. ! If the provider"): a list's bullet
            # that the extractor read as "!" from a symbol font. The sentence ended before it.
            return bool(self.cjk_stop[u - 1]) or (bool(self.latin_stop[u - 1]) and self._ends_word(u - 1))
        return self._ends_word(u)

    def _ends_word(self, u: int) -> bool:
        """Does the Latin stop at view position u end a word that is not an abbreviation?"""
        start = u
        while start > 0 and not self.gap[start] and self.owner[start - 1] == self.owner[u]:
            start -= 1
        word = self.text[start:u]
        return len(word) > 1 and "." not in word and word.lower() not in _ABBREVIATIONS

    def boundary(self, v: int) -> bool:
        """Does a sentence (or a paragraph) start at view position v?

        A paragraph edge counts unless it falls right after a comma (a
        block the extractor split inside a sentence).
        """
        if v <= 0 or v >= self.codes.size:
            return True
        if self.owner[v - 1] != self.owner[v]:
            return self.owner[v - 1] < 0 or self.owner[v] < 0 or self.text[v - 1] not in _CLAUSE_MARKS
        return self.sentence_end(v)


# Bits of a code point's flags (_char_flags): whitespace, CJK stop, Latin stop, closer; its weight above them.
_SPACE, _CJK_STOP, _LATIN_STOP, _CLOSER = 1, 2, 4, 8
_WEIGHT_SHIFT = 4


def _flags(c: str) -> int:
    weight = CJK_WEIGHT if _CJK_LETTER.match(c) else 1 if c.isalnum() else 0
    return (
        (_SPACE if c.isspace() else 0)
        | (_CJK_STOP if c in _CJK_STOPS else 0)
        | (_LATIN_STOP if c in _LATIN_STOPS else 0)
        | (_CLOSER if c in _CLOSERS else 0)
        | (weight << _WEIGHT_SHIFT)
    )


def _char_flags(codes: np.ndarray) -> np.ndarray:
    """Each code point's flags (the bits above, uint8), from a table over the code space filled for the distinct ones.

    One gather per character, the table's entries computed in a loop over the distinct code points only;
    the search reads each property with a bit test instead of a gather of its own (several per character).
    """
    present = np.zeros(int(codes.max(initial=0)) + 1, dtype=bool)
    present[codes] = True
    unique = np.flatnonzero(present)
    table = np.zeros(present.size, dtype=np.uint8)
    table[unique] = [_flags(chr(c)) for c in unique.tolist()]
    return table[codes]


def _running(entries: Sequence[Entry]) -> _Running | None:
    keys: list[Hashable] = []
    keeps: list[bool] = []
    # The entries' texts joined and encoded at once; a separator is one element (code, owner and offset -1).
    texts: list[str] = []
    owners: list[int] = []
    bases: list[int] = []
    for key, text, base, keep in entries:
        if text is None:
            if texts:
                texts.append("\0")
                owners.append(-1)
                bases.append(-1)
            continue
        texts.append(text)
        owners.append(len(keys))
        bases.append(base)
        keys.append(key)
        keeps.append(keep)
    if not texts:
        return None
    # A separator is one NUL ("\0": no whitespace, no stop, weight 0), made negative below.
    joined = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    owner_of = np.array(owners, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    flags = _char_flags(joined)
    # The view's positions in the joined texts, found once and gathered from (a boolean mask per array cost
    # twice as much); its owners and offsets follow from how many each entry keeps.
    at = np.flatnonzero((flags & _SPACE) == 0)
    kept_per_entry = np.diff(np.searchsorted(at, np.append(starts, joined.size)))
    flags, view32 = flags[at], joined[at]
    view_owner = np.repeat(owner_of, kept_per_entry)
    view_orig = at - np.repeat(starts - np.array(bases, dtype=np.int64), kept_per_entry)
    text = view32.tobytes().decode("utf-32-le", "surrogatepass")
    view = view32.astype(np.int64)
    negative = view_owner < 0  # the separators
    view[negative] = -1 - np.flatnonzero(negative)
    n = view.size
    gap = np.ones(n + 1, dtype=bool)
    gap[1:n] = (view_owner[1:] != view_owner[:-1]) | (view_orig[1:] != view_orig[:-1] + 1)
    kept = np.array([*keeps, False], dtype=bool)[view_owner]  # owner -1 (separators) reads the padding
    cjk_stop, latin_stop, closers = (flags & _CJK_STOP) != 0, (flags & _LATIN_STOP) != 0, (flags & _CLOSER) != 0
    stop = cjk_stop | latin_stop
    may_start = np.ones(n + 1, dtype=bool)
    # What sentence_end needs: a stop right before v, or a stop and a closer after it.
    may_start[1:n] = (view_owner[1:] != view_owner[:-1]) | stop[:-1]
    may_start[2:n] |= closers[1:-1] & stop[:-2]
    return _Running(
        keys,
        kept,
        text,
        view,
        view_owner,
        view_orig,
        (flags >> _WEIGHT_SHIFT).astype(np.int64),
        cjk_stop,
        latin_stop,
        closers,
        gap,
        may_start,
    )


def _rule_out_periodic(run: _Running, hashes: tuple[np.ndarray, np.ndarray]) -> None:
    """Give stretches that repeat with a short period codes that match nothing (see the module docstring).

    ``hashes``: :func:`prefix_hashes` of ``run.codes`` as they were before.
    """

    def keep(starts: np.ndarray, ends: np.ndarray, periods: np.ndarray) -> np.ndarray:
        return ends - starts >= 3 * periods

    # Three periods and two windows long: min_length lets the run search skip most of the text.
    for r in find_runs(run.codes, max_period=_PERIODIC, keep=keep, hashes=hashes, min_length=2 * WINDOW):
        run.codes[r.start : r.end] = -1 - np.arange(r.start, r.end)


def _snap(run: _Running, copy: Copy) -> tuple[int, int]:
    """The copy narrowed to whole sentences: from the first sentence start in it to the last sentence end.

    Where a copy's ends fall is where its text stops agreeing with the
    source, often inside a sentence that only begins or ends alike ("The"
    starting the sentences after both copies); cutting there would leave half
    a sentence whose meaning has changed. Paragraph starts are sentence
    starts, in the copy or in its source: a list item or a heading that was a
    paragraph of its own in the source is a whole unit wherever the copy put it.
    """
    shift = copy.start - copy.source

    def boundary(v: int) -> bool:
        return run.boundary(v) or run.boundary(v - shift)

    def candidates(lo: int, hi: int) -> list[int]:
        # The positions in [lo, hi) where boundary() can be True.
        return (np.flatnonzero(run.may_start[lo:hi] | run.may_start[lo - shift : hi - shift]) + lo).tolist()

    end = copy.end
    # A sentence starts after a stop, not with one (a copy often begins with the stop before it).
    p = next(
        (
            v
            for v in candidates(copy.start, end)
            if boundary(v) and not (run.cjk_stop[v] or run.latin_stop[v] or run.closer[v])
        ),
        end,
    )
    q = next((v for v in reversed(candidates(p + 1, end + 1)) if boundary(v)), p)
    # A bullet read as a stop ("below. ! If the provider") starts the next sentence: the copy ends before it.
    while q - 1 > p and run.latin_stop[q - 1] and run.gap[q - 1] and boundary(q - 1):
        q -= 1
    return p, q


def _pieces(run: _Running, start: int, end: int) -> tuple[Piece, ...]:
    """The view stretch [start, end) as (block key, start, end) pieces of the blocks' texts."""
    pieces: list[Piece] = []
    v = start
    while v < end:
        entry = int(run.owner[v])
        # A copy holds no separator, so its owners rise entry by entry.
        stop = v + int(np.searchsorted(run.owner[v:end], entry, side="right"))
        pieces.append((run.keys[entry], int(run.orig[v]), int(run.orig[stop - 1]) + 1))
        v = stop
    return tuple(pieces)


def find_passages(
    entries: Sequence[Entry], *, min_weight: float, piece_weight: float | None = None, max_edit: int = 96
) -> list[Passage]:
    """The later copies in the running text of ``entries`` (paragraphs in reading order; see :data:`Entry`).

    Each copy weighs at least ``min_weight`` (letters and digits, a CJK
    letter counting CJK_WEIGHT) once narrowed to whole sentences. A copy
    interrupted by an edit (a sentence inserted into it, a word changed) is
    one copy in pieces: pieces down to ``piece_weight``, each within
    ``max_edit`` characters of the next, in the text and in the source
    alike, go when together they weigh ``min_weight`` (:func:`_pieces_of_copies`).
    """
    run = _running(entries)
    if run is None or run.codes.size < 2 * WINDOW:
        return []
    # Shared by the run search and the windows: the stretches ruled out become negative codes, which bar
    # every window over them, so the windows' hashes may come from the codes before. One sort of the
    # windows for both copy searches: the second one's codes differ only where they are barred.
    hashes = prefix_hashes(run.codes)
    windows = Windows.of(run.codes, WINDOW, hashes)
    # Every copy holds a window that occurred earlier, and a stretch _rule_out_periodic rules out (a period
    # p <= _PERIODIC, at least max(3p, 2 * WINDOW) >= p + WINDOW long) holds two equal windows p positions
    # apart: where no window repeats there is neither (most short documents), and no search is needed.
    if not windows.repeat_within():
        return []
    if windows.repeat_within(_PERIODIC):
        _rule_out_periodic(run, hashes)
    weight = np.concatenate(([0], np.cumsum(run.weights)))
    low = min_weight if piece_weight is None else min(piece_weight, min_weight)

    def narrow(copy: Copy) -> tuple[int, int]:
        return _snap(run, copy)

    common = {"window": WINDOW, "weights": run.weights, "kept": run.kept, "narrow": narrow, "windows": windows}
    found = find_copies(run.codes, min_weight=min_weight, **common)
    if low < min_weight:
        # The lighter pieces, searched apart so that none stands in a heavy copy's way, outside them
        # (pieces of a copy that an edit split, heavy enough together: _pieces_of_copies).
        codes = run.codes.copy()
        for c in found:
            codes[c.start : c.end] = -1 - np.arange(c.start, c.end)
        found = found + find_copies(codes, min_weight=low, **common)
    snapped = [(c, int(weight[c.end] - weight[c.start])) for c in sorted(found, key=lambda c: c.start)]
    out = []
    for copy, w in _pieces_of_copies(snapped, min_weight, low, max_edit, weight):
        source = _pieces(run, copy.source, copy.source + copy.length)
        out.append(Passage(_pieces(run, copy.start, copy.end), source, w))
    return out


def _pieces_of_copies(
    copies: list[tuple[Copy, int]], min_weight: float, piece_weight: float, max_edit: int, weight: np.ndarray
) -> list[tuple[Copy, int]]:
    """The copies heavy enough, and the lighter ones that are pieces of one copy heavy enough in all.

    Pieces continue each other when the gap between them, in the text and in
    their sources alike, is at most ``max_edit`` characters (the sources in
    the same order): the pieces of one pasted passage that an edit split. A
    chain of such pieces, each at least ``piece_weight``, goes whole when one
    of them is heavy enough alone. Without one, only where the source runs
    on between the pieces (its gap at most a window: text inserted into the
    copy, or a word changed) and the pieces weigh ``min_weight`` together: a
    passage of two sentences with a sentence inserted leaves two light
    pieces, while two lists that share some items and differ in the others
    (the IRS instructions' two lists of education benefits) have different
    text in both gaps, and stay. Last, a light piece that touches a chosen copy (nothing but
    whitespace and punctuation between them: ``weight``, the cumulative weights, is flat there)
    goes with it, whatever its source (:func:`_choose_touching`). One pass over neighbours:
    linear in the copies.
    """
    chosen = [w >= min_weight for _, w in copies]
    k = 0
    while k < len(copies):
        j = k + 1
        if copies[k][1] >= piece_weight:
            while (
                j < len(copies)
                and copies[j][1] >= piece_weight
                and _continues(copies[j - 1][0], copies[j][0], max_edit)
            ):
                j += 1
        if any(chosen[k:j]):
            chosen[k:j] = [True] * (j - k)
        else:
            _choose_insertions(copies, k, j, min_weight, chosen)
        k = j
    _choose_touching(copies, piece_weight, weight, chosen)
    return [c for c, keep in zip(copies, chosen, strict=True) if keep]


def _choose_touching(
    copies: list[tuple[Copy, int]], piece_weight: float, weight: np.ndarray, chosen: list[bool]
) -> None:
    """Choose the light pieces that touch a chosen copy, in a chain of touching pieces that holds one.

    A passage pasted as several copies of different places (a heading and
    its first sentence pasted right after another copied passage) leaves
    the pieces lighter than ``min_weight`` behind, each an exact copy of
    earlier text: standing between copies being cut, they are part of the
    same paste. A light exact repeat that touches no cut copy is ordinary
    writing and stays. One pass each way: linear in the copies.
    """

    def touching(a: Copy, b: Copy) -> bool:
        return a.end <= b.start and weight[b.start] == weight[a.end]

    for order in (range(1, len(copies)), range(len(copies) - 2, -1, -1)):
        for k in order:
            n = k - 1 if order.step == 1 else k + 1
            if chosen[k] or not chosen[n] or copies[k][1] < piece_weight:
                continue
            first, second = (copies[n][0], copies[k][0]) if n < k else (copies[k][0], copies[n][0])
            chosen[k] = touching(first, second)


def _choose_insertions(copies: list[tuple[Copy, int]], k: int, j: int, min_weight: float, chosen: list[bool]) -> None:
    """In the chain ``copies[k:j]`` of light pieces, choose the runs whose source runs on and that weigh enough."""
    while k < j:
        m = k + 1
        while m < j and _source_gap(copies[m - 1][0], copies[m][0]) <= WINDOW:
            m += 1
        if m - k > 1 and sum(w for _, w in copies[k:m]) >= min_weight:
            chosen[k:m] = [True] * (m - k)
        k = m


def _source_gap(first: Copy, second: Copy) -> int:
    return second.source - (first.source + first.length)


def _continues(a: Copy, b: Copy, max_edit: int) -> bool:
    """Is ``b`` the rest of copy ``a`` (or ``a`` the rest of ``b``) after a short edit?"""
    first, second = (a, b) if a.start < b.start else (b, a)
    gap = second.start - first.end
    return 0 <= gap <= max_edit and 0 <= _source_gap(first, second) <= max_edit


def cut_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the ``spans``; at each seam one run of whitespace stays (the one after the cut)."""
    kept: list[str] = []
    pos = 0
    for lo, hi in sorted(spans):
        kept.append(text[pos : max(lo, pos)])
        pos = max(hi, pos)
    kept.append(text[pos:])
    out = kept[0]
    for piece in kept[1:]:
        left, right = out.rstrip(), piece.lstrip()
        seam = piece[: len(piece) - len(right)] or out[len(left) :]
        out = left + seam + right if left and right else left or right
    return out.strip()
