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


class BandIndex:
    """Buckets of the signatures inserted so far, one dict per band."""

    def __init__(self, signatures: np.ndarray, bands: int, rows: int) -> None:
        n = signatures.shape[0]
        # ids[i, k]: the bucket of signature i in band k (equal rows, equal id), numbered across all bands so
        # that one dict holds every band's buckets; as Python lists, read once per query and insert.
        ids = np.zeros((n, bands), dtype=np.int64)
        offset = 0
        for k in range(bands):
            band = np.ascontiguousarray(signatures[:, k * rows : (k + 1) * rows])
            keys = band.view(np.dtype((np.void, band.dtype.itemsize * rows))).ravel()
            inverse = np.unique(keys, return_inverse=True)[1].ravel()
            ids[:, k] = inverse + offset
            offset += n
        self._ids: list[list[int]] = ids.tolist()
        self._buckets: dict[int, list[int]] = {}

    def query(self, i: int) -> set[int]:
        """Inserted signatures sharing at least one band with signature ``i``."""
        found: set[int] = set()
        get = self._buckets.get
        for key in self._ids[i]:
            found.update(get(key, ()))
        return found

    def insert(self, i: int) -> None:
        setdefault = self._buckets.setdefault
        for key in self._ids[i]:
            setdefault(key, []).append(i)
