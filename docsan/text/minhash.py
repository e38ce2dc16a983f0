"""MinHash signatures and LSH band parameters, the values datasketch 2.0 computes, without importing datasketch.

Why not call datasketch: its package ``__init__`` imports its LSH module,
which imports SciPy (``scipy.integrate``) for one numerical integral. That
import cost 0.7 s of CPU in every process (measured: 0.85 s for ``import
datasketch`` against 0.12 s for numpy alone), more than the MinHash work on
a whole corpus, and every ``--jobs`` worker started with ``spawn`` pays it
again. The arithmetic itself is short:

* signatures: datasketch's default ``affine32`` scheme. Each shingle's
  32-bit hash (xxh32 here) is mixed by the MurmurHash3 finalizer, then
  permuted by ``a_k * h + b_k mod 2**32`` (odd ``a_k``) for each of the
  ``num_perm`` permutations, whose ``(a, b)`` come from
  ``numpy.random.RandomState(seed)`` in datasketch's order; a signature is
  the minimum per permutation;
* LSH parameters: the (bands, rows) that minimise the mean of the
  false-positive and false-negative areas, as ``MinHashLSH`` chooses them.
  Both probabilities are polynomials of degree ``bands * rows <= num_perm``
  in the similarity, so Gauss-Legendre quadrature with ``num_perm // 2 + 1``
  nodes integrates them exactly (SciPy's adaptive ``quad`` to 1.5e-8).

``tests/test_minhash.py`` checks both against datasketch itself (a test
dependency): equal signatures on random and corpus shingles, equal
parameters over a grid of thresholds and permutation counts.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from functools import cache
from itertools import chain, repeat

import numpy as np
import xxhash

# MurmurHash3's 32-bit finalizer (shift, multiplier, shift, multiplier, shift).
_FMIX32 = (np.uint32(16), np.uint32(0x85EBCA6B), np.uint32(13), np.uint32(0xC2B2AE35), np.uint32(16))
_EMPTY = np.uint32(0xFFFFFFFF)
# Shingles of (permutation x shingle) values computed at once: 4,096 x 128 x 4 bytes = 2 MiB, which a
# core's cache holds between the multiply, the add and the minimum (at 8 MiB the corpus's signatures
# took a fifth longer).
_CHUNK_ROWS = 4_096


@cache
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` of each permutation, drawn as datasketch draws them for ``affine32``."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


def _fmix32(hv: np.ndarray) -> np.ndarray:
    s1, m1, s2, m2, s3 = _FMIX32
    hv = hv ^ (hv >> s1)
    hv = hv * m1
    hv = hv ^ (hv >> s2)
    hv = hv * m2
    return hv ^ (hv >> s3)


def signatures(shingle_sets: Sequence[Sequence[str]], num_perm: int, seed: int) -> np.ndarray:
    """One MinHash signature (``num_perm`` uint32 values) per shingle set, as a ``(len(sets), num_perm)`` matrix.

    A set with no shingle gets the empty signature (every value 2**32 - 1), as in datasketch.
    """
    out = np.full((len(shingle_sets), num_perm), _EMPTY, dtype=np.uint32)
    a, b = permutations(num_perm, seed)
    sizes = [len(group) for group in shingle_sets]
    # Every set's shingles hashed in one pass, in order, then mixed in one step; a chunk is a slice of them.
    mixed = _fmix32(_hashes(list(chain.from_iterable(shingle_sets))))
    ends = np.cumsum(sizes).tolist()
    start = 0
    while start < len(sizes):
        # A chunk of whole sets, at least one, about _CHUNK_ROWS shingles.
        stop, rows = start, 0
        while stop < len(sizes) and (rows == 0 or rows + sizes[stop] <= _CHUNK_ROWS):
            rows += sizes[stop]
            stop += 1
        first = ends[start] - sizes[start]  # the chunk's first shingle
        if rows:
            # One row per permutation (uint32 arithmetic wraps: mod 2**32): reduceat along the contiguous
            # axis is several times faster than down the columns of the (shingle x permutation) layout.
            permuted = a.reshape(-1, 1) * mixed[first : first + rows]
            permuted += b.reshape(-1, 1)
            nonempty = [i for i in range(start, stop) if sizes[i]]
            offsets = [ends[i] - sizes[i] - first for i in nonempty]
            out[nonempty] = np.minimum.reduceat(permuted, offsets, axis=1).T
        start = stop
    return out


def _hashes(shingles: list[str]) -> np.ndarray:
    """Each shingle's xxh32 hash of its UTF-8 bytes (a lone surrogate as ``surrogatepass`` writes it), as uint32.

    By ``map`` and ``array`` rather than a comprehension and numpy's conversion of Python ints (which
    cost 290 instructions a value). ``str.encode`` with its defaults takes CPython's direct UTF-8 path,
    several times cheaper than naming the codec and error handler; the bytes are the same, and only a
    text with a lone surrogate (which strict UTF-8 refuses) needs the named handler.
    """
    # "I" (C unsigned int) is 32 bits wherever numpy runs: the buffer is read as uint32 as it is.
    try:
        hashes = array("I", map(xxhash.xxh32_intdigest, map(str.encode, shingles)))
    except UnicodeEncodeError:
        encoded = map(str.encode, shingles, repeat("utf-8"), repeat("surrogatepass"))
        hashes = array("I", map(xxhash.xxh32_intdigest, encoded))
    return np.frombuffer(hashes, dtype=np.uint32)


def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` Gauss-Legendre nodes on [-1, 1] and their weights (what ``numpy.polynomial.legendre.leggauss`` gives).

    By Newton's method on the three-term recurrence, elementwise: ``leggauss`` finds the nodes as the
    eigenvalues of a companion matrix (LAPACK), which wakes OpenBLAS's threads, and they spin for about
    0.1 s of a core before they sleep again (measured: 109-112 ms of CPU for a 4-9 ms call), in every
    process and every ``--jobs`` worker, where that core is the other worker's. The nodes agree with
    ``leggauss``'s to 1e-15, the weights to 1e-11 of the largest (tests/test_minhash.py): far inside the
    1.5e-8 of SciPy's ``quad``, which datasketch integrates with.
    """
    k = np.arange(1, n + 1, dtype=float)
    x = np.cos(np.pi * (k - 0.25) / (n + 0.5))  # the usual first guesses, each close to its own root
    for _ in range(100):
        p, dp = _legendre(x, n)
        step = p / dp
        x = x - step
        if np.abs(step).max() < 1e-15:
            break
    _, dp = _legendre(x, n)
    return x[::-1].copy(), (2 / ((1 - x**2) * dp**2))[::-1].copy()


def _legendre(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """P_n(x) and P_n'(x), by the recurrence (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}."""
    before, p = np.ones_like(x), x
    for k in range(1, n):
        before, p = p, ((2 * k + 1) * x * p - k * before) / (k + 1)
    return p, n * (x * p - before) / (x**2 - 1)


@cache
def lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows per band) minimising false positives plus false negatives at ``threshold``, as MinHashLSH picks.

    No LAPACK or BLAS call (the nodes by :func:`gauss_legendre`, the weighted sums elementwise), so
    OpenBLAS's threads stay asleep.
    """
    nodes, weights = gauss_legendre(num_perm // 2 + 1)
    # Quadrature points on [0, threshold] (false positives) and [threshold, 1] (false negatives).
    lo, hi = threshold / 2 * (nodes + 1), threshold + (1 - threshold) / 2 * (nodes + 1)
    w_lo, w_hi = threshold / 2 * weights, (1 - threshold) / 2 * weights
    best, opt = float("inf"), (0, 0)
    # The points' powers for every row count (row r - 1 holds s**r), shared by all band counts.
    r = np.arange(1, num_perm + 1, dtype=float).reshape(-1, 1)
    lo_r, hi_r = lo**r, hi**r
    # datasketch's loop order (bands outer, rows inner; the first strict minimum wins), one band count at a time.
    for b in range(1, num_perm + 1):
        rows = num_perm // b
        fp = ((1 - (1 - lo_r[:rows]) ** b) * w_lo).sum(axis=1)
        fn = (((1 - hi_r[:rows]) ** b) * w_hi).sum(axis=1)
        error = 0.5 * fp + 0.5 * fn
        k = int(np.argmin(error))
        if error[k] < best:
            best, opt = float(error[k]), (b, k + 1)
    return opt


def band_keys(signature: np.ndarray, bands: int, rows: int) -> list[bytes]:
    """One key per band: the band number and the band's values, hashed (what two similar signatures share)."""
    return [
        k.to_bytes(2, "big") + xxhash.xxh64_digest(signature[k * rows : (k + 1) * rows].tobytes()) for k in range(bands)
    ]
