"""Maximal tandem repeats ("runs") of a code sequence in O(n · log(max_period)) vectorised work.

A *run* of period ``p`` is a maximal interval ``[start, end)`` with
``a[i] == a[i + p]`` for every ``i`` in ``[start, end - p)`` and
``end - start >= 2p`` (at least two full copies). The incident's
``(.+?)\\1{3,}`` regex finds these by backtracking, which is quadratic or worse
on long text without line breaks. Here:

* small periods (``p < SMALL``) are found exactly, one vectorised comparison
  ``a[:-p] == a[p:]`` per period: O(n · SMALL) (a fraction of it where the
  caller wants long runs only: :func:`_small_runs`);
* larger periods are found per octave ``[P, 2P)``: a run of such a period has
  an "agreement interval" of length ``>= p >= P``, so it fully contains a
  window of length ``P/2`` starting at a multiple of ``P/2``. Comparing the
  polynomial hash of each such anchor window with the hashes ``P..2P-1``
  characters further on costs ``(n / (P/2)) · P = 2n`` per octave, so
  O(n · log(max_period)) in all. Every hash hit is then checked and extended
  by exact element comparison, so a hash collision can never produce a run
  that is not really there.

Anchors whose whole comparison range lies inside one run of a smaller period
are skipped: in a periodic stretch (``"ab" * 500_000``) every anchor would hit
every multiple of the period, and those hits only rediscover that run. The
price is completeness in a corner case (a longer run all of whose anchor ranges
sit inside shorter-period runs is missed); what is reported is always exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from docsan.text.rolling_hash import (
    PROBE,
    doubled_hashes,
    lce,
    prefix_hashes,
    short_lces,
    sparse_hashes,
    window_hashes,
)

# Periods below this are compared directly; at and above it by anchored hashes.
SMALL = 16
# The shortest small-period run a test of the octaves can turn on (see find_runs' ``min_length``): the first
# octave skips a hit at anchor a of period P >= SMALL when a run reaches a + SMALL // 2 + P from at or before a.
_REACH_LENGTH = SMALL + SMALL // 2
# keep(starts, ends, periods) -> bool mask: lets the caller drop runs it would
# never act on before they become Python objects.
RunFilter = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True, slots=True)
class Run:
    start: int
    end: int  # exclusive
    period: int

    @property
    def length(self) -> int:
        return self.end - self.start


class _Reach:
    """For a query position, the farthest end of a known run starting at or before it.

    Kept as sorted starts with a running maximum of ends, so an update costs
    O(r log r) in the number of runs r, not O(n) in the text length.
    """

    def __init__(self) -> None:
        self._starts = np.empty(0, dtype=np.int64)
        self._ends = np.empty(0, dtype=np.int64)
        self._reach = np.empty(0, dtype=np.int64)

    def add(self, starts: np.ndarray, ends: np.ndarray) -> None:
        if starts.size:
            all_starts = np.concatenate((self._starts, starts))
            order = np.argsort(all_starts, kind="stable")
            self._starts = all_starts[order]
            self._ends = np.concatenate((self._ends, ends))[order]
            self._reach = np.maximum.accumulate(self._ends)

    def at(self, positions: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self._starts, positions, side="right") - 1
        return np.where(idx >= 0, self._reach[np.maximum(idx, 0)] if self._reach.size else 0, 0)


def find_runs(
    codes: np.ndarray,
    *,
    max_period: int,
    keep: RunFilter | None = None,
    hashes: tuple[np.ndarray, np.ndarray] | None = None,
    min_length: int = 0,
) -> list[Run]:
    """All primitive maximal runs of ``codes`` with period <= ``max_period`` that ``keep`` accepts.

    ``codes`` is an int64 array of non-negative codes and separators: give
    separators unique negative values so no run crosses them (the long
    periods' search relies on it: it skips what a separator cuts off). Runs
    contained in a run of a smaller period (the same repetition seen with a
    multiple of its period) are not reported.
    ``hashes``: :func:`prefix_hashes` of ``codes``, where the caller needs them too.
    ``min_length``: runs shorter are not reported. The small periods are then searched for runs at least
    ``min(min_length, _REACH_LENGTH)`` long only (:func:`_small_runs`): a shorter run is contained in no
    run of ``min_length`` (nor decides whether one is primitive), and decides none of the octaves' tests,
    each of which asks for a run reaching at least ``_REACH_LENGTH`` past where it starts.
    """
    n = int(codes.size)
    found: list[Run] = []
    reach = _Reach()
    octaves = max_period >= SMALL and n >= 2 * SMALL
    shortest = min(min_length, _REACH_LENGTH) if octaves else min_length
    if min_length:
        keep = _at_least(min_length, keep)
    # eq[1 : n - p + 1] is codes[:-p] == codes[p:], framed by False: its changes alternate start, end.
    eq = np.zeros(n + 1, dtype=bool)
    for p in range(1, min(SMALL, max_period + 1)):
        if 2 * p > n:
            break
        starts, ends = _small_runs(codes, p, max(2 * p, shortest), eq)
        if not starts.size:  # the common case in short text: no run of this period, nothing to record
            continue
        primitive = reach.at(starts) < ends
        reach.add(starts, ends)
        starts, ends = starts[primitive], ends[primitive]
        if keep is not None and starts.size:
            mask = keep(starts, ends, np.full(starts.size, p))
            starts, ends = starts[mask], ends[mask]
        found.extend(Run(int(s), int(e), p) for s, e in zip(starts, ends, strict=True))
    if octaves:
        found.extend(_long_runs(codes, max_period, reach, keep, hashes))
    return found


def _at_least(length: int, keep: RunFilter | None) -> RunFilter:
    """``keep``, and only for runs at least ``length`` long."""

    def long_kept(starts: np.ndarray, ends: np.ndarray, periods: np.ndarray) -> np.ndarray:
        long = ends - starts >= length
        return long if keep is None else long & keep(starts, ends, periods)

    return long_kept


def _small_runs(codes: np.ndarray, p: int, least: int, eq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (starts, ends) of the maximal runs of period ``p`` at least ``least`` (>= 2p) long, by start.

    Such a run is ``least - p`` positions in a row where ``codes[i] == codes[i + p]`` (its agreement).
    Where that is 4 or more, the agreement holds two consecutive multiples of ``step`` (half of it), so
    the codes are compared at the multiples alone (a ``step``-th of the text, 6-11 for the copy search's
    runs), and at every position only around the pairs of multiples that both agree: on the corpus 0.14 %
    of the positions, where comparing each and finding the changes took three passes over the text per
    period. ``eq``: a buffer of n + 1 for comparing every position (``step`` below 2).
    """
    n = int(codes.size)
    step = (least - p) // 2
    if step < 2:
        np.equal(codes[:-p], codes[p:], out=eq[1 : n - p + 1])
        eq[n - p + 1] = False
        edges = np.flatnonzero(eq[1 : n - p + 2] != eq[: n - p + 1])
        starts, ends = edges[0::2], edges[1::2] + p
    else:
        sampled = codes[: n - p : step] == codes[p::step]
        pairs = np.flatnonzero(sampled[:-1] & sampled[1:])
        if not pairs.size:
            return pairs, pairs
        # A run's agreement [s, e) has its first multiple f < s + step and its last l >= e - step, and the
        # pairs from f to l: around each, [one step before it, one step after it) covers [f - step, l + step),
        # the agreement and the position before it. Merged where they touch, so none cuts an agreement.
        lo = np.maximum(pairs * step - step, 0)
        hi = np.minimum(pairs * step + 2 * step, n - p)
        new = np.flatnonzero(lo[1:] > hi[:-1]) + 1
        lo, hi = lo[np.concatenate(([0], new))], hi[np.append(new - 1, hi.size - 1)]
        sizes = hi - lo
        at = np.arange(int(sizes.sum())) + np.repeat(lo - (np.cumsum(sizes) - sizes), sizes)
        agree = codes[at] == codes[at + p]
        # An agreement continues across neighbouring positions of one stretch only.
        joined = agree[1:] & agree[:-1] & (at[1:] == at[:-1] + 1)
        opens, closes = agree.copy(), agree.copy()
        opens[1:] &= ~joined
        closes[:-1] &= ~joined
        starts, ends = at[opens], at[closes] + 1 + p
    long = ends - starts >= least
    return starts[long], ends[long]


def _long_runs(
    codes: np.ndarray,
    max_period: int,
    reach: _Reach,
    keep: RunFilter | None,
    hashes: tuple[np.ndarray, np.ndarray] | None,
) -> list[Run]:
    n = int(codes.size)
    # Built on first use where not given: periodic inputs never need them.
    prefix, inv = hashes or (np.empty(0, dtype=np.int64),) * 2
    rev = codes[::-1]
    found: list[Run] = []
    # The last dense octave's hashes of every window (width half): the next octave's follow by doubling.
    full: np.ndarray | None = None
    # Where each stretch between separators ends (the sequence's end included), for the anchor test below.
    bounds = np.append(np.flatnonzero(codes < 0), n)
    big = SMALL
    while big <= max_period and 2 * big <= n:
        half = big // 2
        anchors = np.arange(0, n - half - big + 1, half)
        # Skip anchors whose whole comparison range lies in one run of a smaller
        # period (see the module docstring), and those whose stretch ends before
        # their nearest comparison window [a + big, a + big + half) does: no run
        # crosses a separator, so theirs could only be hash collisions (in text
        # cut into paragraphs, most anchors of the long periods' octaves).
        reach_at = reach.at(anchors)
        keep_anchor = (reach_at < anchors + half + 2 * big - 1) & (
            bounds[np.searchsorted(bounds, anchors)] >= anchors + big + half
        )
        anchors, reach_at = anchors[keep_anchor], reach_at[keep_anchor]
        if not anchors.size:
            full = None
            big *= 2
            continue
        if not prefix.size:
            prefix, inv = prefix_hashes(codes)
        width = min(big, max_period + 1 - big)
        # Hashing every window is one pass over n (a doubling, where the last octave was dense too);
        # a sparse hash costs several per compared pair (gathers, two remainders). On the corpus the
        # dense way pays from about a quarter of n pairs (instructions of the repeats stage: n/4 against
        # n, n/2, n/8 and n/16 pairs).
        dense = 4 * anchors.size * width >= n
        if dense:
            # Hash every window once (int32: residues < 2**31, half the memory traffic),
            # padded with unique negatives so windows past the end never match;
            # shifted[a, j] is the hash of the window big + j after a.
            if full is not None and full.size == n - half // 2 + 1:
                full = doubled_hashes(full, half // 2)
            else:
                full = window_hashes(prefix, inv, half, slice(0, n - half + 1))
            win = np.empty(n - half + 1 + 2 * big, dtype=np.int32)
            win[: n - half + 1] = full
            win[n - half + 1 :] = -1 - np.arange(2 * big, dtype=np.int32)
            shifted = np.lib.stride_tricks.sliding_window_view(win, width)
        else:
            full = None
        octave: list[Run] = []
        done: dict[int, int] = {}
        offsets = big + np.arange(width)
        # Chunks bound the anchors x periods matrix to a few MB.
        chunk = max(1, (1 << 21) // width)
        for c in range(0, anchors.size, chunk):
            a = anchors[c : c + chunk]
            if dense:
                hit = shifted[a + big] == win[a][:, None]
            else:  # sparse (most of a periodic input was skipped): hash only what is compared
                hit = (
                    sparse_hashes(prefix, inv, half, a[:, None] + offsets)
                    == sparse_hashes(prefix, inv, half, a)[:, None]
                )
            # Row-major like np.nonzero(hit), which is several times slower on a 2-D array than on its ravel.
            flat = np.flatnonzero(hit)
            hit_a = flat // width
            hit_j = flat - hit_a * width
            starts, periods = a[hit_a], big + hit_j
            # compared inside one shorter-period run: skipped
            fresh = reach_at[c : c + chunk][hit_a] < starts + half + periods
            octave.extend(_extend_hits(codes, rev, reach, done, starts[fresh], periods[fresh]))
        if octave:
            starts, ends, pers = (np.array([getattr(r, f) for r in octave]) for f in ("start", "end", "period"))
            reach.add(starts, ends)
            if keep is not None:
                octave = [r for r, m in zip(octave, keep(starts, ends, pers), strict=True) if m]
            found.extend(octave)
        big *= 2
    return found


def _extend_hits(
    codes: np.ndarray, rev: np.ndarray, reach: _Reach, done: dict[int, int], starts: np.ndarray, periods: np.ndarray
) -> list[Run]:
    """The runs that hash hits at ``starts`` with ``periods`` (in search order) extend to.

    A hit inside the agreement already extended for its period (``done``:
    period -> agreement end) is skipped; only that bookkeeping is done hit by
    hit, the extensions are whole-array :func:`short_lces` with :func:`lce`
    for the few that reach past ``PROBE``.
    """
    n = int(codes.size)
    rights = short_lces(codes, starts, starts + periods, n - starts - periods)
    taken: list[int] = []
    agree_ends: list[int] = []
    for k, (start, p, right) in enumerate(zip(starts.tolist(), periods.tolist(), rights.tolist(), strict=True)):
        if done.get(p, -1) > start:
            continue  # already extended
        if right < 0:
            right = PROBE + lce(codes, start + PROBE, start + p + PROBE, n - start - p - PROBE)
        done[p] = start + right
        taken.append(k)
        agree_ends.append(start + right)
    if not taken:
        return []
    starts, periods = starts[taken], periods[taken]
    lefts = short_lces(rev, n - starts, n - starts - periods, starts)
    for k in np.flatnonzero(lefts < 0).tolist():
        s, p = int(starts[k]), int(periods[k])
        lefts[k] = PROBE + lce(rev, n - s + PROBE, n - s - p + PROBE, s - PROBE)
    run_starts = starts - lefts
    run_ends = np.array(agree_ends, dtype=np.int64) + periods
    real = (run_ends - run_starts >= 2 * periods) & (reach.at(run_starts) < run_ends)
    return [
        Run(s, e, p)
        for s, e, p in zip(run_starts[real].tolist(), run_ends[real].tolist(), periods[real].tolist(), strict=True)
    ]
