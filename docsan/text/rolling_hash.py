"""Polynomial rolling hashes of windows of a code sequence, and exact extension of a hash hit.

Shared by the two repeat finders: tandem runs (:mod:`docsan.text.runs`) and
later copies of earlier text (:mod:`docsan.text.copies`). A hash only
proposes; every hit is checked by :func:`lce`, element by element, so a
collision costs time but never makes a repeat that is not there.
"""

from __future__ import annotations

import numpy as np

# A Mersenne prime modulus keeps every product of two residues below 2**62,
# so numpy int64 arithmetic never overflows; unlike hashing modulo 2**64 it
# is not defeated by Thue–Morse strings. The base is fixed: deterministic.
_MOD = (1 << 31) - 1
_BASE = 1_000_003
_INV_BASE = pow(_BASE, _MOD - 2, _MOD)


def _doubled_powers(base: int, n: int) -> np.ndarray:
    """base**i mod _MOD for i in [0, n), by doubling: log n vectorised steps."""
    out = np.empty(max(n, 1), dtype=np.int64)
    out[0] = 1
    k = 1
    while k < n:
        m = min(k, n - k)
        out[k : k + m] = out[:m] * pow(base, k, _MOD) % _MOD
        k *= 2
    return out[:n]


# Powers are the same for every sequence: a table per base, kept up to this many (8 MiB each), serves every
# document of a run; a longer sequence gets its own.
_TABLE_MAX = 1 << 20
_tables: dict[int, np.ndarray] = {}


def _powers(base: int, n: int) -> np.ndarray:
    """base**i mod _MOD for i in [0, n), read only: a view of the base's table where it is long enough."""
    table = _tables.get(base)
    if table is None or table.size < n:
        if n > _TABLE_MAX:
            return _doubled_powers(base, n)
        # Grown to the next power of two, so a batch of documents rebuilds it a few times at most.
        table = _doubled_powers(base, 1 << max(n - 1, 1).bit_length())
        table.flags.writeable = False
        _tables[base] = table
    return table[:n]


def lce(a: np.ndarray, i: int, j: int, limit: int) -> int:
    """Length of the longest common extension a[i:i+k] == a[j:j+k], k <= limit, in O(k)."""
    k = 0
    step = 64
    while k < limit:
        m = min(step, limit - k)
        # argmax of a boolean array: the first True (or 0 where there is none), without np.flatnonzero's
        # wrappers and index array (a copy search calls this thousands of times on short stretches).
        diff = a[i + k : i + k + m] != a[j + k : j + k + m]
        first = int(diff.argmax())
        if diff[first]:
            return k + first
        k += m
        step *= 2
    return limit


# How far :func:`short_lces` compares; most hits of a hash search in text extend by a few words.
PROBE = 64
# Hits compared per step, bounding its index matrices to a few MB.
_PROBE_ROWS = 1 << 12


def short_lces(a: np.ndarray, i: np.ndarray, j: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """:func:`lce` of each ``(i, j, limit)`` that is below ``PROBE``, and -1 where it is not.

    One whole-array comparison of ``PROBE`` elements per pair instead of a
    numpy call per pair: a repeat search makes thousands of short hits, each
    cheap to check and dear to check alone. A caller finishes a -1 with
    :func:`lce` from ``PROBE`` on, and only where it needs the length.
    """
    out = np.empty(i.size, dtype=np.int64)
    k = np.arange(PROBE)
    for r in range(0, i.size, _PROBE_ROWS):
        rows = slice(r, r + _PROBE_ROWS)
        inside = k < limit[rows, None]
        # Positions past a pair's limit read a[0]; they are masked as a stop either way.
        stop = ~inside | (a[np.where(inside, i[rows, None] + k, 0)] != a[np.where(inside, j[rows, None] + k, 0)])
        first = stop.argmax(axis=1)
        out[rows] = np.where(stop[np.arange(first.size), first], first, -1)
    return out


def prefix_hashes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums of c_i * BASE**i (mod _MOD) and the inverse powers that normalise a window's hash.

    The codes lie in (-_MOD, _MOD) (code points, and negative separators numbered by position).
    """
    n = int(codes.size)
    prefix = np.zeros(n + 1, dtype=np.int64)
    # A code plus _MOD is a positive residue below 2 * _MOD, and its product with a power stays below 2**63:
    # one remainder per term instead of two. Each term is < 2**31, so the running sum stays below 2**63 for
    # any realistic n.
    np.cumsum((codes + _MOD) * _powers(_BASE, n) % _MOD, out=prefix[1:])
    prefix %= _MOD
    return prefix, _powers(_INV_BASE, n)


def window_hashes(prefix: np.ndarray, inv: np.ndarray, width: int, at: slice | np.ndarray) -> np.ndarray:
    """Position-independent hashes (in [0, 2**31)) of the windows of length ``width`` starting at ``at`` (in range)."""
    # The difference of two prefix sums lies in (-_MOD, _MOD), so plus _MOD it is a positive residue below
    # 2 * _MOD, and its product with an inverse power stays below 2**63: one remainder instead of two.
    if isinstance(at, slice):
        return (prefix[at.start + width : at.stop + width] - prefix[at] + _MOD) * inv[at] % _MOD
    return (prefix[at + width] - prefix[at] + _MOD) * inv[at] % _MOD


def doubled_hashes(hashes: np.ndarray, width: int) -> np.ndarray:
    """Hashes of the windows of length ``2 * width`` from ``hashes``, those of every window of length ``width``.

    A window's hash is the sum of c_k * BASE**k over its codes, so the long
    window's is its first half's plus BASE**width times its second half's:
    the same residues as :func:`window_hashes` gives, in one multiply-add per
    window instead of two products and two reductions over the prefix sums.
    """
    count = hashes.size - width
    return (hashes[:count] + hashes[width:] * pow(_BASE, width, _MOD)) % _MOD


def sparse_hashes(prefix: np.ndarray, inv: np.ndarray, width: int, pos: np.ndarray) -> np.ndarray:
    """Window hashes at arbitrary positions; a window past the end gets a unique negative value."""
    n = prefix.size - 1
    ok = pos <= n - width
    return np.where(ok, window_hashes(prefix, inv, width, np.where(ok, pos, 0)), -1 - pos)
