"""Later copies of earlier text ("the same passage again, anywhere further on"), in near-linear time.

The tandem finder (:mod:`docsan.text.runs`) sees copies that follow each
other; a passage pasted again two pages later is a copy that does not. This
finds every stretch of the sequence that repeats an earlier stretch
exactly, at least ``min_weight`` long, with the same rolling hashes
(:mod:`docsan.text.rolling_hash`):

1. the hash of the window of ``window`` elements at every position, and for
   each window where the same window first occurs (one sort, shared by a second search of the same sequence);
2. *anchors* every ``window`` positions: an anchor whose window occurred
   earlier is extended both ways by exact comparison (:func:`lce`) against
   that first occurrence. Any copy at least ``2 · window - 1`` long holds a
   whole anchor window, so none that long is missed for want of an anchor;
3. a copy heavy enough moves the scan past its end, so the forward
   extensions of such copies never overlap, and the backward one stops at
   the last reported copy: each element is compared a bounded number of
   times. A rejected candidate stops at its first mismatch, under
   ``min_weight``.

A copy never overlaps its own source (a stretch that does is periodic: the
tandem finder's business), never starts inside an earlier copy, and never
uses an earlier copy as its source (a copy whose source runs into one keeps
the longest stretch that does not): what is reported can all be removed, and
the first occurrence of everything stays. Negative codes never match
anything (give each its own value), which is how a caller keeps separators
and stretches it has ruled out (periodic data) out of every copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from docsan.text.rolling_hash import lce, prefix_hashes, window_hashes


@dataclass(frozen=True, slots=True)
class Copy:
    """``codes[start:start + length]`` equals ``codes[source:source + length]``, and ``source + length <= start``."""

    source: int
    start: int
    length: int

    @property
    def end(self) -> int:
        return self.start + self.length


@dataclass(frozen=True, slots=True, eq=False)
class Windows:
    """The hash of every ``window``-element window of a sequence with its position, sorted once.

    Each hash (below 2**31) and its position make one int64 key (the hash
    above the position's bits: under 2**62 for fewer than 2**31 windows, far
    past what a document holds), so a plain sort, several times faster than
    a stable argsort, orders equal hashes by position. The sort is most of a
    search's cost; a second search of the same sequence with more of it
    barred (made negative: the copies the first one found) reuses it, and
    one with nothing more barred (the first found no copy) also reuses the
    first occurrences (:meth:`first_occurrences`). The sorted keys are kept
    split into their hashes and positions, and the neighbours of equal hash
    found once: every question below reads them. Only the windows whose hash
    another window shares are kept (on the corpus 16-31 % of a text's): a
    window with a hash of its own repeats nothing and is the first of its
    hash, so no answer below needs it, and each reads a quarter as much.
    """

    window: int
    hashes: np.ndarray  # sorted: the hashes that two windows or more have
    positions: np.ndarray  # of the windows in that order: equal hashes by position
    # k where hashes[k] == hashes[k + 1].
    same: np.ndarray
    # The last (barred, first occurrences) asked for.
    _last: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list, init=False, repr=False)

    @classmethod
    def of(cls, codes: np.ndarray, window: int, hashes: tuple[np.ndarray, np.ndarray] | None = None) -> Windows:
        """The windows of ``codes`` (at least ``window`` long); windows over negative codes are barred later.

        ``hashes``: :func:`prefix_hashes` of a sequence equal to ``codes`` wherever ``codes`` is not negative
        (a window's hash depends on its own codes alone, and no search reads a barred window's).
        """
        prefix, inv = hashes or prefix_hashes(codes)
        count = int(codes.size) - window + 1
        bits = max(1, count.bit_length())
        keys = np.sort(window_hashes(prefix, inv, window, slice(0, count)) << bits | np.arange(count, dtype=np.int64))
        sorted_hashes = keys >> bits
        equal = sorted_hashes[1:] == sorted_hashes[:-1]
        # The sorted windows with a neighbour of the same hash, before or after.
        shared = np.zeros(count, dtype=bool)
        shared[:-1] = equal
        shared[1:] |= equal
        keys, sorted_hashes = keys[shared], sorted_hashes[shared]
        same = np.flatnonzero(sorted_hashes[1:] == sorted_hashes[:-1])
        return cls(window, sorted_hashes, keys & ((1 << bits) - 1), same)

    def repeat_within(self, distance: int | None = None) -> bool:
        """Do two windows have the same hash (at most ``distance`` positions apart, where given)?

        Equal windows have equal hashes, so False means no window repeats: no copy to find. Windows of one
        hash are neighbours in the sorted order, by position, so two within ``distance`` of each other
        make a pair of neighbours that are too.
        """
        if distance is None or not self.same.size:
            return bool(self.same.size)
        return bool((self.positions[self.same + 1] - self.positions[self.same] <= distance).any())

    def first_occurrences(self, barred: np.ndarray) -> np.ndarray:
        """For each window, the first window with the same hash; itself when it is the first or ``barred``.

        A window whose hash no other has (not kept, see the class) is the first of its hash: itself.

        Asked again with the same ``barred``, the answer of the last call (read only).
        """
        if self._last and np.array_equal(self._last[0][0], barred):
            return self._last[0][1]
        free = ~barred[self.positions]
        positions, hashes = self.positions[free], self.hashes[free]
        first = np.arange(barred.size, dtype=np.int64)
        if positions.size:
            starts = np.flatnonzero(np.concatenate(([True], hashes[1:] != hashes[:-1])))
            counts = np.diff(np.concatenate((starts, [positions.size])))
            first[positions] = np.repeat(positions[starts], counts)
        first.flags.writeable = False
        self._last[:] = [(barred, first)]
        return first


def find_copies(
    codes: np.ndarray,
    *,
    window: int,
    weights: np.ndarray,
    min_weight: float,
    kept: np.ndarray | None = None,
    narrow: Callable[[Copy], tuple[int, int]] | None = None,
    windows: Windows | None = None,
) -> list[Copy]:
    """The later copies in ``codes`` (int64) whose ``weights`` (one per element) sum to at least ``min_weight``.

    Copies are maximal where they start (as long as the text agrees with the
    source), reported left to right, never overlapping each other. Elements
    where ``kept`` is set may be a copy's source but are never part of a
    copy: a copy running over them is reported as its pieces around them.
    ``narrow`` maps each found copy to the stretch of it to report (the
    caller's unit boundaries); what it leaves at a copy's end stays open to
    the next copy, which may extend back over it. ``windows``: those of an
    earlier search of the same sequence, which may differ from ``codes``
    only where ``codes`` are negative now (:class:`Windows`).
    """
    n = int(codes.size)
    if n < 2 * window:
        return []
    if windows is None or windows.window != window:
        windows = Windows.of(codes, window)
    negatives = np.concatenate(([0], np.cumsum(codes < 0)))
    # A window that holds a negative element matches nothing.
    first = windows.first_occurrences(negatives[window:] - negatives[: n - window + 1] > 0)
    # In the weights' own type: integer weights (the running text's) are summed exactly without a cast of every
    # element to float, and compare with ``min_weight`` as before.
    weight = np.concatenate(([0], np.cumsum(weights)))
    anchors = _heavy_anchors(first, window, weight, min_weight)
    rev = codes[::-1]
    taken = np.zeros(n, dtype=bool)  # positions inside a reported copy
    out: list[Copy] = []
    done = 0  # the end of the last accepted copy: no anchor before it is looked at again
    free = 0  # the end of the last reported stretch: later copies start at or after it
    for a in anchors.tolist():
        if a < done:
            continue
        i = int(first[a])
        gap = a - i
        forward = lce(codes, i, a, min(n - a, gap))
        if forward < window:
            continue  # a hash collision, or the source would overlap the copy at once
        # Backwards: not into the last copy, not so far that the copy would overlap its source.
        back = lce(rev, n - a, n - i, min(i, a - free, gap - forward))
        start, source, length = a - back, i - back, back + forward
        used = np.flatnonzero(taken[source : source + length])
        if used.size:
            # Part of the source is an earlier copy, which goes: keep the longest stretch that is not.
            edges = np.concatenate(([-1], used, [length]))
            k = int(np.argmax(np.diff(edges)))
            lo, hi = int(edges[k]) + 1, int(edges[k + 1])
            start, source, length = start + lo, source + lo, hi - lo
        if weight[start + length] - weight[start] < min_weight:
            continue
        for lo, hi in _stretches(kept, start, start + length):
            piece = Copy(source + lo - start, lo, hi - lo)
            if narrow is not None:
                lo, hi = narrow(piece)
                piece = Copy(piece.source + lo - piece.start, lo, max(0, hi - lo))
            if piece.length and weight[piece.end] - weight[piece.start] >= min_weight:
                out.append(piece)
                taken[piece.start : piece.end] = True
                free = piece.end
        # Even when narrowing left nothing: the anchors inside would only find this copy again.
        done = start + length
    return out


def _heavy_anchors(first: np.ndarray, window: int, weight: np.ndarray, min_weight: float) -> np.ndarray:
    """The anchors (every ``window``-th position) whose window occurred earlier and that can be in a heavy copy.

    Every window of a copy occurred earlier (at its source), so a copy lies
    within one run of such windows plus a window's length; a run too light
    for ``min_weight`` (``weight``: cumulative weights) holds none, and the
    anchors in it are dropped before any comparison (most hash hits are
    phrases a few words long).
    """
    repeated = np.zeros(first.size + 2, dtype=np.int8)
    repeated[1:-1] = first < np.arange(first.size)
    # Framed by zeros, the changes alternate: a run's start, its end (one np.flatnonzero for both).
    edges = np.flatnonzero(np.diff(repeated))
    starts, ends = edges[0::2], edges[1::2]
    if not starts.size:
        return starts
    # Only the heavy runs are looked up (the light ones, most, can hold no anchor that is kept).
    heavy = weight[ends - 1 + window] - weight[starts] >= min_weight
    starts, ends = starts[heavy], ends[heavy]
    if not starts.size:
        return starts
    anchors = np.arange(0, first.size, window)
    run = np.maximum(np.searchsorted(starts, anchors, side="right") - 1, 0)
    return anchors[(starts[run] <= anchors) & (anchors < ends[run])]


def _stretches(kept: np.ndarray | None, start: int, end: int) -> list[tuple[int, int]]:
    """The stretches of [start, end) outside ``kept``."""
    if kept is None or not kept[start:end].any():
        return [(start, end)]
    edges = np.flatnonzero(np.diff(np.concatenate(([True], kept[start:end], [True])).astype(np.int8)))
    return [(start + int(a), start + int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
