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
        # ids[i, k]: the bucket of signature i in band k (equal rows, equal id)
        self.ids = np.zeros((n, bands), dtype=np.int64)
        for k in range(bands):
            band = np.ascontiguousarray(signatures[:, k * rows : (k + 1) * rows])
            keys = band.view(np.dtype((np.void, band.dtype.itemsize * rows))).ravel()
            self.ids[:, k] = np.unique(keys, return_inverse=True)[1].ravel()
        self._buckets: list[dict[int, list[int]]] = [{} for _ in range(bands)]

    def query(self, i: int) -> set[int]:
        """Inserted signatures sharing at least one band with signature ``i``."""
        found: set[int] = set()
        for bucket, key in zip(self._buckets, self.ids[i].tolist(), strict=True):
            found.update(bucket.get(key, ()))
        return found

    def insert(self, i: int) -> None:
        for bucket, key in zip(self._buckets, self.ids[i].tolist(), strict=True):
            bucket.setdefault(key, []).append(i)
