"""Later copies of earlier text ("the same passage again, anywhere further on"), in near-linear time.

The tandem finder (:mod:`docsan.text.runs`) sees copies that follow each
other; a passage pasted again two pages later is a copy that does not. This
finds every stretch of the sequence that repeats an earlier stretch
exactly, at least ``min_weight`` long, with the same rolling hashes
(:mod:`docsan.text.rolling_hash`):

1. the hash of the window of ``window`` elements at every position, and for
   each window where the same window first occurs (one stable sort);
2. *anchors* every ``window`` positions: an anchor whose window occurred
   earlier is extended both ways by exact comparison (:func:`lce`) against
   that first occurrence. Any copy at least ``2 · window - 1`` long holds a
   whole anchor window, so none that long is missed for want of an anchor;
3. an accepted copy moves the scan past its end, so the forward extensions
   of accepted copies never overlap, and the backward one stops at the last
   accepted copy: each element is compared a bounded number of times. A
   rejected candidate stops at its first mismatch, under ``min_weight``.

A copy never overlaps its own source (a stretch that does is periodic: the
tandem finder's business), never starts inside an earlier copy, and never
uses an earlier copy as its source: what is reported can all be removed, and
the first occurrence of everything stays. Negative codes never match
anything (give each its own value), which is how a caller keeps separators
and stretches it has ruled out (periodic data) out of every copy.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def first_occurrences(hashes: np.ndarray) -> np.ndarray:
    """For each position, the first position holding the same hash (itself when it is the first)."""
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.concatenate((starts, [ordered.size])))
    first = np.empty_like(order)
    first[order] = np.repeat(order[starts], counts)
    return first


def find_copies(codes: np.ndarray, *, window: int, weights: np.ndarray, min_weight: float) -> list[Copy]:
    """The later copies in ``codes`` (int64) whose ``weights`` (one per element) sum to at least ``min_weight``.

    Copies are maximal where they start (as long as the text agrees with the
    source), reported left to right, never overlapping each other.
    """
    n = int(codes.size)
    if n < 2 * window:
        return []
    prefix, inv = prefix_hashes(codes)
    hashes = window_hashes(prefix, inv, window, slice(0, n - window + 1))
    negatives = np.concatenate(([0], np.cumsum(codes < 0)))
    barred = negatives[window:] - negatives[: n - window + 1] > 0
    # Hashes are >= 0: a unique negative makes a window that holds a barred element match nothing.
    hashes = np.where(barred, -1 - np.arange(hashes.size), hashes)
    first = first_occurrences(hashes)
    anchors = np.arange(0, hashes.size, window)
    anchors = anchors[first[anchors] < anchors]
    weight = np.concatenate(([0.0], np.cumsum(weights, dtype=np.float64)))
    rev = codes[::-1]
    taken = np.zeros(n, dtype=bool)  # positions inside an accepted copy
    out: list[Copy] = []
    done = 0  # the end of the last accepted copy: later copies start at or after it
    for a in anchors.tolist():
        if a < done:
            continue
        i = int(first[a])
        gap = a - i
        forward = lce(codes, i, a, min(n - a, gap))
        if forward < window:
            continue  # a hash collision, or the source would overlap the copy at once
        # Backwards: not into the last copy, not so far that the copy would overlap its source.
        back = lce(rev, n - a, n - i, min(i, a - done, gap - forward))
        start, source, length = a - back, i - back, back + forward
        if weight[start + length] - weight[start] < min_weight:
            continue
        if taken[source : source + length].any():
            continue  # its source is partly an earlier copy, which goes
        out.append(Copy(source, start, length))
        taken[start : start + length] = True
        done = start + length
    return out
