"""LSH banding over a whole batch of MinHash signatures at once.

datasketch's ``MinHashLSH`` hashes each band of each signature in Python on
every ``insert`` and ``query``; on the corpus that was a third of the stage's
time. Here the band keys of all signatures are computed in one vectorised
step (``np.unique`` per band), with the (bands, rows) that ``MinHashLSH``
itself chooses for the threshold (:func:`docsan.text.minhash.lsh_params`), so
the candidates are the same.
"""

from __future__ import annotations

import numpy as np

# Below this many signatures the buckets of every band are numbered in one np.unique: one call per band cost a
# short chat (two signatures, 14 bands) more than the rest of the stage. Above it one sort of n × bands keys costs
# more than a sort of n keys per band (measured: the same at about 200 signatures).
_ONE_SORT_BELOW = 128


class BandIndex:
    """Buckets of the signatures inserted so far, one dict per band."""

    def __init__(self, signatures: np.ndarray, bands: int, rows: int) -> None:
        n = signatures.shape[0]
        # ids[i, k]: the bucket of signature i in band k (same band and equal rows, same id), numbered across all
        # bands (below n * bands) so that one dict holds every band's buckets.
        if n < _ONE_SORT_BELOW:
            ids = _ids_one_sort(signatures, bands, rows)
        else:
            ids = np.zeros((n, bands), dtype=np.int64)
            for k in range(bands):
                band = np.ascontiguousarray(signatures[:, k * rows : (k + 1) * rows])
                ids[:, k] = _numbered(band) + k * n
        # A bucket that holds one signature never names a candidate: only the buckets shared by several are
        # kept, as Python lists, for the few signatures that have one (on the corpus most have none, and
        # building, querying and inserting every signature's buckets was most of the deduplication loop).
        shared = np.bincount(ids.ravel(), minlength=n * bands)[ids] > 1
        self._ids: dict[int, list[int]] = {
            int(i): ids[i, shared[i]].tolist() for i in np.flatnonzero(shared.any(axis=1))
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


def _numbered(rows: np.ndarray) -> np.ndarray:
    """For each row of a C-contiguous 2-D array, the number of its distinct value (equal rows, equal number)."""
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    return np.unique(keys, return_inverse=True)[1].ravel()


def _ids_one_sort(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """The bucket ids of every band at once: each band's rows behind the band's number, numbered together."""
    n = signatures.shape[0]
    keyed = np.empty((n, bands, rows + 1), dtype=signatures.dtype)
    keyed[:, :, 0] = np.arange(bands)
    keyed[:, :, 1:] = signatures[:, : bands * rows].reshape(n, bands, rows)
    return _numbered(keyed.reshape(n * bands, rows + 1)).reshape(n, bands)
