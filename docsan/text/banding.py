"""LSH banding over a whole batch of MinHash signatures at once.

datasketch's ``MinHashLSH`` hashes each band of each signature in Python on
every ``insert`` and ``query``; on the corpus that was a third of the stage's
time. Here the band keys of all signatures are computed in one vectorised
step (one sort of every band of every signature, :func:`_bucket_ids`), with
the (bands, rows) that ``MinHashLSH`` itself chooses for the threshold
(:func:`docsan.text.minhash.lsh_params`), so the candidates are the same.
"""

from __future__ import annotations

import numpy as np

# The odd multiplier of the bands' polynomial hash (mod 2**64), from the golden ratio: any odd one keeps equal
# rows of two bands apart (see _bucket_ids).
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


class BandIndex:
    """Buckets of the signatures inserted so far, one dict per band."""

    def __init__(self, signatures: np.ndarray, bands: int, rows: int) -> None:
        n = signatures.shape[0]
        ids = _bucket_ids(signatures, bands, rows)
        # A bucket that holds one signature never names a candidate: only the buckets shared by several are
        # kept, as Python lists, for the few signatures that have one (on the corpus most have none, and
        # building, querying and inserting every signature's buckets was most of the deduplication loop).
        shared = np.bincount(ids.ravel(), minlength=n * bands)[ids] > 1
        # One conversion of them all, sliced per signature (row-major: each signature's in band order), not
        # two numpy indexings and a conversion per signature.
        counts = shared.sum(axis=1)
        having = np.flatnonzero(counts)
        ends = np.cumsum(counts[having])
        flat, starts = ids[shared].tolist(), (ends - counts[having]).tolist()
        self._ids: dict[int, list[int]] = {
            i: flat[a:b] for i, a, b in zip(having.tolist(), starts, ends.tolist(), strict=True)
        }
        self._buckets: dict[int, list[int]] = {}

    def query(self, i: int) -> set[int]:
        """Inserted signatures other than ``i`` sharing at least one band with signature ``i``."""
        found: set[int] = set()
        get = self._buckets.get
        for key in self._ids.get(i, ()):
            found.update(get(key, ()))
        found.discard(i)
        return found

    def insert(self, i: int) -> None:
        setdefault = self._buckets.setdefault
        for key in self._ids.get(i, ()):
            setdefault(key, []).append(i)


def _bucket_ids(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """ids[i, k]: the bucket of signature i in band k (same band and equal rows, same id), numbered across all
    bands (below n * bands) so that one dict holds every band's buckets.

    Each band of each signature is hashed to 64 bits with its band's number (a polynomial in an odd
    multiplier: equal rows of two bands never collide), and one sort of the hashes numbers them: a sort of
    the rows themselves compares them as bytes, several times the cost. Neighbours of equal hash are then
    checked to be equal rows, so a collision (none on the corpus; MinHash values are as good as random,
    but nothing stops crafted ones) costs the exact numbering, never a wrong bucket.
    """
    n = signatures.shape[0]
    cells = signatures[:, : bands * rows].reshape(n * bands, rows)  # row i * bands + k: band k of signature i
    hashes = np.tile(np.arange(bands, dtype=np.uint64), n)
    for c in range(rows):
        hashes = hashes * _MULTIPLIER + cells[:, c]  # wraps: mod 2**64
    order = np.argsort(hashes)
    ordered = hashes[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    if (cells[order[same]] != cells[order[same + 1]]).any():
        return _exact_ids(cells, n, bands)
    ids = np.empty(n * bands, dtype=np.int64)
    ids[order[:1]] = 0
    ids[order[1:]] = np.cumsum(ordered[1:] != ordered[:-1])
    return ids.reshape(n, bands)


def _exact_ids(cells: np.ndarray, n: int, bands: int) -> np.ndarray:
    """:func:`_bucket_ids` by comparing the rows themselves (each behind its band's number), as bytes."""
    keyed = np.empty((n * bands, cells.shape[1] + 1), dtype=cells.dtype)
    keyed[:, 0] = np.tile(np.arange(bands), n)
    keyed[:, 1:] = cells
    keys = keyed.view(np.dtype((np.void, keyed.dtype.itemsize * keyed.shape[1]))).ravel()
    return np.unique(keys, return_inverse=True)[1].reshape(n, bands)
